"""What a sandboxed execution takes and returns. Every backend speaks these types."""

from __future__ import annotations

import enum
from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Per-execution limits. Every execution gets all of them.

    Attributes:
        wall_time_s: seconds of real time before the whole process group is killed.
        cpu_time_s: seconds of CPU time (RLIMIT_CPU).
        memory_bytes: address-space limit of each process (RLIMIT_AS).
        output_bytes: bytes of stdout and of stderr kept; past that the stream is cut and the program killed.
        file_size_bytes: largest file the program may write (RLIMIT_FSIZE).
        processes: processes and threads the program may have at once, itself included.
        open_files: file descriptors per process (RLIMIT_NOFILE).
    """

    wall_time_s: float = 5.0
    cpu_time_s: float = 5.0
    memory_bytes: int = 512 * MIB
    output_bytes: int = 64 * 1024
    file_size_bytes: int = 4 * MIB
    processes: int = 16
    open_files: int = 64

    def __post_init__(self) -> None:
        for name in ("wall_time_s", "cpu_time_s", "memory_bytes", "output_bytes", "file_size_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")
        if self.processes < 1 or self.open_files < 8:
            raise ValueError("Limits.processes must be >= 1 and Limits.open_files >= 8")


class Status(str, enum.Enum):
    """How an execution ended."""

    OK = "ok"  #: exited with status 0
    ERROR = "error"  #: exited non-zero (an uncaught exception, a failed assert, sys.exit(1))
    TIMEOUT = "timeout"  #: wall-time or CPU-time limit reached; the process group was killed
    MEMORY = "memory"  #: the memory limit was reached (MemoryError or killed for it)
    OUTPUT_LIMIT = "output_limit"  #: wrote more than output_bytes; killed
    KILLED = "killed"  #: ended by a signal (a segfault, SIGKILL, ...)
    SANDBOX_ERROR = "sandbox_error"  #: the sandbox itself failed; the program may not have run


@dataclass(frozen=True)
class ExecutionResult:
    """The outcome of one execution.

    Attributes:
        status: how it ended.
        exit_code: the exit status when the program exited, else None.
        signal: the signal that ended it, else None.
        stdout: what it printed (decoded as UTF-8 with replacement), at most ``output_bytes``.
        stderr: its error output, likewise capped.
        duration_s: wall time from start to end.
        output_truncated: True when stdout or stderr was cut at the cap.
        message: a readable one-line account, fit to show a model as feedback.
    """

    status: Status
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    duration_s: float
    output_truncated: bool = False
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


@dataclass(frozen=True)
class IsolationReport:
    """Which protections are active in a sandbox, for logs and for ``mrlm-envs`` to show.

    Attributes:
        separate_process: the code runs in a separate process (always True).
        rlimits: resource limits are applied.
        user_namespace: runs in its own user namespace (an unprivileged uid).
        network_namespace: runs with no network interface but loopback.
        pid_namespace: sees only its own processes.
        seccomp: a seccomp filter blocks sockets and process execution.
        warnings: what could not be enabled here, and why.
    """

    separate_process: bool
    rlimits: bool
    user_namespace: bool
    network_namespace: bool
    pid_namespace: bool
    seccomp: bool
    warnings: tuple[str, ...] = ()
