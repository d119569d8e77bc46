"""The ``python`` tool: run code in the sandbox, with state that lasts for one episode.

State never lives in the environment's process. The session keeps only the *source* of the cells
that ran successfully; each call sends the sandbox a small driver (``_python_driver.py``) with that
history and the new cell. The driver replays the history with its output discarded, which rebuilds
the variables, functions and imports, then runs the new cell REPL-style: its stdout and stderr come
back, plus the ``repr`` of a final expression. A fresh episode starts with an empty history.

Consequences of replaying: every call re-runs the earlier cells, so the time limit covers them too,
and values drawn from randomness or the clock are drawn again (seed the generator to keep them). A
cell that fails is not kept. When an earlier cell fails on replay, the session starts over and says so.
The cells also see a copy of the workspace's files in their working directory; what they write there
is not copied back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mrlm.envs.sandbox import Limits, Sandbox, Status
from mrlm.envs.tools.registry import Tool, ToolError, truncate
from mrlm.envs.tools.workspace import Workspace

DRIVER_SOURCE = (Path(__file__).with_name("_python_driver.py")).read_text(encoding="utf-8")
#: The same as in ``_python_driver.py``, which runs alone in the sandbox and imports nothing of ours.
CELLS_FILE = "_mrlm_cells.json"
REPLAY_FAILED = 3

MAX_CODE_CHARS = 8000


class PythonSession:
    """The cells of one episode's Python session, and the sandbox that runs them.

    Args:
        limits: sandbox limits of each call (replay included); the sandbox's defaults if None.
        output_chars: longest output returned to the agent; the rest is cut with a note.
        max_cells: most cells kept for replay; later cells still run but are not kept.
        max_history_chars: most characters of kept source.
        workspace: whose files the cells can read, if any.
        sandbox: the sandbox to run in; by default the process-wide one, so that many sessions share
            one set of workers. A copy made by pickling uses the default.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        output_chars: int = 2000,
        max_cells: int = 20,
        max_history_chars: int = 40_000,
        workspace: Workspace | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.output_chars = output_chars
        self.max_cells = max_cells
        self.max_history_chars = max_history_chars
        self.workspace = workspace
        self.sandbox = sandbox
        self.history: list[str] = []

    def reset(self) -> None:
        """Forget every cell: the next call starts from a fresh interpreter state."""
        self.history = []

    def run(self, code: str) -> str:
        """Run one cell; its output, or :class:`ToolError` with the traceback or the limit reached."""
        files = self._workspace_files()
        files[CELLS_FILE] = json.dumps({"history": self.history, "cell": code})
        sandbox = self.sandbox if self.sandbox is not None else Sandbox.shared()
        try:
            result = sandbox.run(DRIVER_SOURCE, files=files, limits=self.limits)
        except (ValueError, TypeError) as error:  # the sandbox refused the request (files too large)
            raise ToolError(f"the sandbox refused the call: {error}") from None
        output = _join(result.stdout, result.stderr)
        if result.status is Status.OK:
            note = self._keep(code)
            return truncate(output or "(no output)", self.output_chars) + note
        if result.status is Status.ERROR and result.exit_code == REPLAY_FAILED:
            kept = len(self.history)
            self.history = []
            raise ToolError(
                f"the session could not be restored: an earlier cell failed when replayed "
                f"({result.stderr.strip()[-300:]}); the {kept} earlier cells were forgotten, so define "
                f"your variables again"
            )
        if result.status is Status.ERROR:
            raise ToolError(truncate(output, self.output_chars))
        stopped = (Status.TIMEOUT, Status.MEMORY, Status.OUTPUT_LIMIT, Status.KILLED)
        reason = (
            f"the cell was stopped: {result.message}"
            if result.status in stopped
            else f"the sandbox failed: {result.message}"
        )
        if self.history and result.status is Status.TIMEOUT:
            reason += f" (each call also replays the {len(self.history)} earlier cells)"
        partial = truncate(output, self.output_chars)
        raise ToolError(f"{partial}\n{reason}" if partial else reason)

    def _keep(self, code: str) -> str:
        size = sum(len(cell) for cell in self.history) + len(code)
        if len(self.history) >= self.max_cells or size > self.max_history_chars:
            return (
                f"\n[note: the session keeps at most {self.max_cells} cells and {self.max_history_chars} "
                "characters of code; this cell's definitions will not persist]"
            )
        self.history.append(code)
        return ""

    def _workspace_files(self) -> dict[str, str]:
        if self.workspace is None or self.workspace.root is None:
            return {}
        return {
            path: data.decode("utf-8", errors="replace") for path, data in self.workspace.snapshot().items()
        }

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["sandbox"] = None  # a sandbox holds worker processes; a copy uses the default one
        return state


def _join(stdout: str, stderr: str) -> str:
    stdout, stderr = stdout.rstrip("\n"), stderr.rstrip("\n")
    if stdout and stderr:
        return f"{stdout}\n{stderr}"
    return stdout or stderr


class PythonTool:
    """The callable behind the ``python`` tool."""

    def __init__(self, session: PythonSession) -> None:
        self.session = session

    def __call__(self, arguments: dict[str, Any]) -> str:
        return self.session.run(arguments["code"])


def python_tool(session: PythonSession) -> Tool:
    """The ``python`` tool: ``{"code": str}`` -> the cell's output."""
    seconds = f"{session.limits.wall_time_s:g}"
    return Tool(
        name="python",
        description=(
            "Run Python 3 code in an isolated sandbox and return what it prints, plus the value of a final "
            "expression (like a notebook cell). Variables, functions and imports persist across calls within "
            f"the episode. Each call may take at most {seconds} s. No network access. The workspace files "
            "can be read from the current directory; writes there are not kept."
        ),
        parameters={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "the code to run",
                    "minLength": 1,
                    "maxLength": MAX_CODE_CHARS,
                }
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        function=PythonTool(session),
    )
