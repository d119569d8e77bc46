"""What a sandboxed execution takes and returns. Every backend speaks these types."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal

from mrlm.envs.sandbox.forkserver.plan import SWITCHABLE

MIB = 1 << 20

#: The most each limit may be: beyond these the kernel's interfaces (timers, rlimits, cgroup and
#: tmpfs sizes) overflow or refuse, so a larger value is refused as it is made, not at the run.
MAX_SECONDS = 86_400.0
MAX_BYTES = 1 << 50
MAX_PROCESSES = 4096
MAX_OPEN_FILES = 4096

#: How much isolation a caller demands of a :class:`~mrlm.envs.sandbox.Sandbox`:
#: ``"none"`` takes what the machine allows (with warnings), ``"namespaces"`` needs the user, pid,
#: network and mount namespaces, ``"strongest"`` needs every layer of :class:`IsolationReport`.
Requirement = Literal["strongest", "namespaces", "none"]


@dataclass(frozen=True)
class Limits:
    """Per-execution limits. Every execution gets all of them.

    Attributes:
        wall_time_s: seconds of real time before every process of the execution is killed.
        cpu_time_s: seconds of CPU time of each process (RLIMIT_CPU, whole seconds, rounded up).
        memory_bytes: memory of the execution. Where the sandbox has a memory cgroup
            (``IsolationReport.memory_bound`` is ``"cgroup v1"`` or ``"cgroup v2"``), it bounds all
            the execution's processes together (resident memory, the scratch's files and, v1 with
            swap accounting or v2, swap): past it the kernel kills one of them and the status is
            ``MEMORY`` unless the program still exits 0. Each process is also held to it alone as
            an address-space limit (RLIMIT_AS, so an oversized allocation raises MemoryError); where
            that is the only bound (``"per-process rlimit"``), ``processes`` of them may each use it.
        output_bytes: bytes of stdout and of stderr kept; past that the stream is cut and the program killed.
        file_size_bytes: largest file the program may write (RLIMIT_FSIZE).
        processes: processes and threads the program may have at once, itself included.
        open_files: file descriptors per process (RLIMIT_NOFILE).
        scratch_bytes: total size of the scratch directory when it is a private in-memory file system
            (the program's files, main.py and stdin count towards it).
        allow_exec: whether the program may start other programs (``execve``); off by default, so
            ``subprocess`` and ``os.system`` fail with PermissionError where the seccomp layer is active.

    Raises:
        ValueError: a limit of the wrong type, not positive, or above its most (a day of wall or
            CPU time, :data:`MAX_BYTES` of any size, :data:`MAX_PROCESSES` processes,
            :data:`MAX_OPEN_FILES` descriptors).
    """

    wall_time_s: float = 5.0
    cpu_time_s: float = 5.0
    memory_bytes: int = 512 * MIB
    output_bytes: int = 64 * 1024
    file_size_bytes: int = 4 * MIB
    processes: int = 16
    open_files: int = 64
    scratch_bytes: int = 64 * MIB
    allow_exec: bool = False

    def __post_init__(self) -> None:
        for name in ("wall_time_s", "cpu_time_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"Limits.{name} must be a finite number, got {value!r}")
        for name in (
            "memory_bytes",
            "output_bytes",
            "file_size_bytes",
            "processes",
            "open_files",
            "scratch_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"Limits.{name} must be an int, got {value!r}")
        for name in (
            "wall_time_s",
            "cpu_time_s",
            "memory_bytes",
            "output_bytes",
            "file_size_bytes",
            "scratch_bytes",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")
        if self.processes < 1 or self.open_files < 8:
            raise ValueError("Limits.processes must be >= 1 and Limits.open_files >= 8")
        for name, most in (
            ("wall_time_s", MAX_SECONDS),
            ("cpu_time_s", MAX_SECONDS),
            ("memory_bytes", MAX_BYTES),
            ("output_bytes", MAX_BYTES),
            ("file_size_bytes", MAX_BYTES),
            ("scratch_bytes", MAX_BYTES),
            ("processes", MAX_PROCESSES),
            ("open_files", MAX_OPEN_FILES),
        ):
            if getattr(self, name) > most:
                raise ValueError(f"Limits.{name} must be at most {most:,}, got {getattr(self, name)!r}")
        if not isinstance(self.allow_exec, bool):
            raise ValueError(f"Limits.allow_exec must be a bool, got {self.allow_exec!r}")


class Status(str, enum.Enum):
    """How an execution ended."""

    OK = "ok"  #: exited with status 0
    ERROR = "error"  #: exited non-zero (an uncaught exception, a failed assert, sys.exit(1))
    TIMEOUT = "timeout"  #: wall-time or CPU-time limit reached; every process was killed
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


#: The isolation layers of :class:`IsolationReport`, strongest set first: the two that always hold,
#: then those a worker switches on where the machine allows them.
LAYERS: tuple[str, ...] = ("separate_process", "rlimits", *SWITCHABLE)

#: The layers ``require="namespaces"`` insists on.
NAMESPACE_LAYERS: tuple[str, ...] = (
    "user_namespace",
    "pid_namespace",
    "network_namespace",
    "mount_namespace",
)


@dataclass(frozen=True)
class IsolationReport:
    """Which protections are active in a sandbox, for logs and for ``mrlm-envs`` to show.

    Attributes:
        separate_process: the code runs in a separate process (always True).
        rlimits: resource limits are applied.
        user_namespace: runs in its own user namespace (an unprivileged uid).
        network_namespace: runs with no network interface but loopback.
        pid_namespace: sees only its own processes, and they all end when it does (a pid namespace
            per execution).
        seccomp: a seccomp filter blocks sockets and process execution.
        warnings: what could not be enabled here, and why.
        mount_namespace: runs in its worker's private mount table: the scratch directory is an
            in-memory file system at /tmp (also at /dev/shm), emptied after every execution, and
            /proc shows the worker's processes only.
        ipc_namespace: System V IPC objects and POSIX message queues are private to one execution.
        read_only_filesystem: everything but the scratch directory is mounted read-only.
        unprivileged_user: the program runs as a uid that owns nothing outside its scratch directory
            and holds no capabilities.
        backend: how executions are started (``"forkserver"``: forked from a pre-started worker process).
        private_filesystem: the host's files are hidden: the program's root file system holds the
            interpreter, its standard library, the system's /usr and libraries, a few files of /etc,
            /dev's harmless devices, /proc and its scratch directory; no site-packages or
            dist-packages directory, no project sources, no home directories, nothing else.
        memory_cgroup: a memory cgroup bounds the memory of all the execution's processes together.
        memory_bound: what bounds an execution's memory: ``"cgroup v1"`` or ``"cgroup v2"`` (all its
            processes together), else ``"per-process rlimit"`` (each process alone, see
            :attr:`Limits.memory_bytes`).
    """

    separate_process: bool
    rlimits: bool
    user_namespace: bool
    network_namespace: bool
    pid_namespace: bool
    seccomp: bool
    warnings: tuple[str, ...] = ()
    mount_namespace: bool = False
    ipc_namespace: bool = False
    read_only_filesystem: bool = False
    unprivileged_user: bool = False
    backend: str = ""
    private_filesystem: bool = False
    memory_cgroup: bool = False
    memory_bound: str = "per-process rlimit"

    def active(self) -> tuple[str, ...]:
        """The names of the active layers, in the order of :data:`LAYERS`."""
        return tuple(name for name in LAYERS if getattr(self, name))

    def missing(self, requirement: Requirement) -> tuple[str, ...]:
        """The layers ``requirement`` needs that are not active (empty when it is met)."""
        if requirement == "none":
            return ()
        needed = NAMESPACE_LAYERS if requirement == "namespaces" else LAYERS
        return tuple(name for name in needed if not getattr(self, name))


class IsolationUnavailable(RuntimeError):
    """The isolation a caller demanded (``require=``) is not available on this machine."""


class IsolationWarning(UserWarning):
    """An isolation layer could not be enabled; the sandbox runs with fewer protections."""
