"""Turn a worker's reply into an :class:`ExecutionResult` with a status and a readable message."""

from __future__ import annotations

import math
import re
import signal
from typing import Any

from mrlm.envs.sandbox.api import ExecutionResult, Limits, Status


def sandbox_error(message: str, duration: float = 0.0) -> ExecutionResult:
    """A result saying the sandbox itself failed (the program may not have run)."""
    return ExecutionResult(
        Status.SANDBOX_ERROR, None, None, "", "", duration, message=f"sandbox error: {message}"
    )


def to_result(reply: dict[str, Any], limits: Limits) -> ExecutionResult:
    """Classify a reply; the first matching rule wins (a kill by the sandbox explains the rest)."""
    if reply.get("error"):
        return sandbox_error(str(reply["error"]), float(reply.get("duration") or 0.0))
    exit_code: int | None = reply["exit_code"]
    signum: int | None = reply["signal"]
    stderr: str = reply["stderr"]
    cpu_time = reply.get("cpu_time")
    if reply["output_exceeded"]:
        status, message = Status.OUTPUT_LIMIT, f"output limit exceeded ({limits.output_bytes} bytes)"
    elif reply["timed_out"]:
        status, message = Status.TIMEOUT, f"time limit exceeded ({limits.wall_time_s:g} s of wall time)"
    elif reply.get("oom_killed") and exit_code != 0:
        status = Status.MEMORY
        message = f"memory limit exceeded ({limits.memory_bytes >> 20} MiB, all processes together)"
    elif signum == signal.SIGXCPU or (signum == signal.SIGKILL and _spent_cpu_limit(cpu_time, limits)):
        status, message = Status.TIMEOUT, f"CPU time limit exceeded ({limits.cpu_time_s:g} s)"
    elif exit_code and _last_line(stderr).startswith("MemoryError"):
        status, message = Status.MEMORY, f"memory limit exceeded ({limits.memory_bytes >> 20} MiB)"
    elif signum is not None:
        status, message = Status.KILLED, f"killed by signal {_signal_name(signum)}"
    elif exit_code == 0:
        status, message = Status.OK, "ok"
    elif reply.get("exited") is False:  # answered once it closed its output (until_output_closed)
        status, message = Status.OK, "ok (its output closed; not waited for to exit)"
    else:
        status, message = Status.ERROR, _error_line(stderr) or f"exit status {exit_code}"
    return ExecutionResult(
        status=status,
        exit_code=exit_code,
        signal=signum,
        stdout=reply["stdout"],
        stderr=stderr,
        duration_s=float(reply["duration"]),
        output_truncated=bool(reply["truncated"]),
        message=message,
    )


#: The last line of a traceback: ``SomeError: message`` (or a bare name), e.g. ``AssertionError``.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Iteration)\b(: .*)?$")


def _spent_cpu_limit(cpu_time: float | None, limits: Limits) -> bool:
    """Whether a SIGKILL came from RLIMIT_CPU, set in whole seconds. ``cpu_time`` is read from the
    clock the limit is checked against (see ``zygote._limit_clock``), which is at the limit when the
    kill comes; the margin is for kernels that give only the run time, a tick or so behind."""
    return cpu_time is not None and cpu_time >= math.ceil(limits.cpu_time_s) - 0.1


def _error_line(stderr: str) -> str:
    """The line naming the exception; processes that share stderr may have interleaved lines."""
    lines = [line.strip() for line in stderr.strip().splitlines()]
    for line in reversed(lines):
        if _EXCEPTION_LINE.match(line):
            return line
    return lines[-1] if lines else ""


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip() if lines else ""


def _signal_name(signum: int) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return str(signum)
    description = signal.strsignal(signum)
    return f"{name} ({description})" if description else name
