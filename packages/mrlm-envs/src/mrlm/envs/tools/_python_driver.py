"""The program the ``python`` tool runs in the sandbox (it is never imported by the package).

It reads ``_mrlm_cells.json`` (``{"history": [...], "cell": "..."}``), replays the earlier cells of
the session with their output discarded, then runs the new cell as a REPL would: statements
execute, and the value of a final expression is printed with ``repr`` unless it is None.

Exit status: 0 when the new cell ran, 1 when it raised (the traceback, limited to the session's
cells, is on stderr), 3 when an earlier cell failed on replay.
"""

import ast
import contextlib
import io
import json
import linecache
import sys
import traceback

CELLS_FILE = "_mrlm_cells.json"
REPLAY_FAILED = 3


def run_cell(source: str, name: str, namespace: dict[str, object]) -> None:
    # Registered with linecache so that tracebacks can show the cell's lines.
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    tree = ast.parse(source, filename=name, mode="exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        last = ast.Expression(final.value)
    exec(compile(tree, name, "exec"), namespace)
    if last is not None:
        value = eval(compile(last, name, "eval"), namespace)
        if value is not None:
            print(repr(value))


def describe(error: BaseException) -> str:
    frames = [
        frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename.startswith("<cell")
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)] if frames else []
    lines += traceback.format_exception_only(type(error), error)
    return "".join(lines)


def main() -> int:
    with open(CELLS_FILE, encoding="utf-8") as handle:
        payload = json.load(handle)
    namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
    for index, source in enumerate(payload["history"], 1):
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                run_cell(source, f"<cell {index}>", namespace)
        except BaseException as error:  # SystemExit and KeyboardInterrupt included
            sys.stderr.write(f"cell {index}: " + "".join(traceback.format_exception_only(type(error), error)))
            return REPLAY_FAILED
    try:
        run_cell(payload["cell"], f"<cell {len(payload['history']) + 1}>", namespace)
    except BaseException as error:
        sys.stdout.flush()
        sys.stderr.write(describe(error))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
