"""Run the program in an already-started interpreter the way ``python main.py`` would, then exit.

The fork server's child inherits a warm interpreter, so this replays what the interpreter itself does
around a script: a fresh ``__main__`` module, ``sys.argv``, tracebacks printed by ``sys.excepthook``,
``SystemExit`` turned into an exit status, non-daemon threads joined, atexit handlers run, streams
flushed. It then leaves with ``os._exit``, skipping a module teardown nobody needs.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import functools
import os
import signal
import sys
import types
from typing import NoReturn

from mrlm.envs.sandbox.forkserver import linux

#: The program's file name in its scratch directory.
MAIN = "main.py"
#: Larger programs are compiled by the execution itself, under its limits.
_PRECOMPILE_MAX_BYTES = 256 * 1024
#: The exit status CPython gives when flushing stdout fails at exit.
_FLUSH_FAILED = 120


#: What :func:`prepare` made: the script's path, its ``__main__`` module and its ``sys.path``.
_prepared: list[tuple[str, types.ModuleType, list[str]]] = []


def prepare(scratch: str, search_path: tuple[str, ...]) -> None:
    """Make the ``__main__`` module and ``sys.path`` of programs whose scratch directory is always
    ``scratch``: done once in the zygote, every execution it forks inherits them instead of building
    its own (which would copy a few dozen pages each time). ``sys.path`` itself is left alone here:
    the zygote must never import from the program's directory."""
    path = os.path.join(scratch, MAIN)
    _prepared[:] = [(path, _new_main(path), [scratch, *search_path])]


def run(source: bytes, code: types.CodeType | None, scratch: str, search_path: tuple[str, ...]) -> NoReturn:
    """Execute ``source`` as the script ``main.py`` of ``scratch``, which leads ``sys.path`` followed
    by ``search_path``; never returns.

    The source is bytes, as in a file: a coding declaration in it is honoured, as ``python`` would.
    ``code`` is the source compiled already (see :func:`precompile`), or None to compile it here.
    """
    path = os.path.join(scratch, MAIN)
    if _prepared and _prepared[0][0] == path:
        _, main, sys.path[:] = _prepared[0]
    else:
        main = _new_main(path)
        sys.path[:] = [scratch, *search_path]
    sys.argv[:] = [MAIN]
    sys.modules["__main__"] = main
    status, interrupted = _execute(source, code, path, main.__dict__)
    status = _finish(status)
    if interrupted:  # like CPython: an uncaught KeyboardInterrupt ends the process by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # (as a namespace's pid 1 it is ignored: exit status 1)
    os._exit(status)


def _new_main(path: str) -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path, __builtins__=builtins, __cached__=None, __loader__=None, __spec__=None
    )
    return main


def precompile(source: bytes, path: str) -> types.CodeType | None:
    """``source`` compiled for :func:`run`, or None where it is too large to compile outside the
    execution's limits or does not compile (the execution then compiles it and reports the error
    as ``python`` would). Done by the server: compiling in the execution touches, and so copies, a
    hundred pages of the inherited interpreter."""
    if len(source) > _PRECOMPILE_MAX_BYTES:
        return None
    return _precompile(source, path)


@functools.lru_cache(maxsize=64)  # the same program, a test harness say, often runs again and again
def _precompile(source: bytes, path: str) -> types.CodeType | None:
    try:
        return _compile(source, path)
    except Exception:
        return None


def _compile(source: bytes, path: str) -> types.CodeType:
    # dont_inherit: the program must not pick up this module's own __future__ imports.
    return compile(source, path, "exec", dont_inherit=True)


def _execute(
    source: bytes, code: types.CodeType | None, path: str, namespace: dict[str, object]
) -> tuple[int, bool]:
    """Returns the exit status, and whether the program ended by an uncaught KeyboardInterrupt."""
    if code is None:
        try:
            code = _compile(source, path)
        except Exception as error:  # SyntaxError; ValueError for NUL bytes; RecursionError, ...
            _print_exception(error, None)
            return 1, False
    try:
        exec(code, namespace)
    except SystemExit as exit_request:
        return _exit_status(exit_request), False
    except BaseException as error:
        _print_exception(error, _program_frames(error.__traceback__, path))
        return 1, isinstance(error, KeyboardInterrupt)
    return 0, False


def _program_frames(traceback: types.TracebackType | None, path: str) -> types.TracebackType | None:
    """Drop the worker's own frames from the top of a traceback, as if the script ran alone."""
    frame = traceback
    while frame is not None and frame.tb_frame.f_code.co_filename != path:
        frame = frame.tb_next
    return frame if frame is not None else traceback


def _print_exception(error: BaseException, traceback: types.TracebackType | None) -> None:
    # The exception must carry the trimmed traceback too: the hook prints the one it carries.
    error = error.with_traceback(traceback)
    try:
        sys.excepthook(type(error), error, traceback)
    except BaseException:  # a broken hook installed by the program: fall back like CPython does
        sys.__excepthook__(type(error), error, traceback)


def _exit_status(exit_request: SystemExit) -> int:
    """CPython's rule: None is 0, an int is itself, anything else is printed and gives 1."""
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


def _finish(status: int) -> int:
    """What interpreter shutdown does before the process ends: threads, atexit, flushing."""
    threading = sys.modules.get("threading")
    shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads, as Py_Finalize does
    if shutdown is not None:
        with contextlib.suppress(BaseException):
            shutdown()
    atexit._run_exitfuncs()
    for stream, failed_status in ((sys.stdout, _FLUSH_FAILED), (sys.stderr, status)):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            status = failed_status
    linux.flush_c_stdio()
    return status
