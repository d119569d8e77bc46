"""Run untrusted Python (model-written code, tool calls) outside the caller's process, under limits.

>>> from mrlm.envs.sandbox import Limits, Sandbox
>>> sandbox = Sandbox.shared()
>>> result = sandbox.run("print(6 * 7)")
>>> result.status.value, result.stdout
('ok', '42\\n')
>>> sandbox.run("while True: pass", limits=Limits(wall_time_s=0.5)).status.value
'timeout'
>>> report = sandbox.isolation
>>> report.separate_process, report.rlimits
(True, True)
>>> all(getattr(report, layer) or any(w.startswith(layer) for w in report.warnings) for layer in LAYERS)
True

How it runs: :class:`Sandbox` keeps a few worker processes (fresh interpreters, started with
``subprocess``, never forked from the caller, which may run threads). Each worker forks one process
per execution from a warm interpreter, so an execution costs a fork, not an interpreter start-up.
The source runs as the script ``main.py`` in a scratch directory that is first on ``sys.path``.
With ``run(..., prestart=True)`` the worker forks the same program again right after replying and
lets it run up to its first read of stdin, so that the next run of it skips its start-up (the code
envs' judge runs this way).

Isolation layers (each one reported by :attr:`Sandbox.isolation`, see :class:`IsolationReport`):

- separate process, always; rlimits on CPU time, address space, file size, open files and (where the
  program has a uid of its own) processes; wall time, and output (the program is killed past
  ``output_bytes``), both enforced by the worker.
- user namespace: started as root, the worker maps its own root and the program's user to host
  uids that own nothing (``UID_BASE`` and up); the program holds no capabilities.
- pid namespace per execution: the program is pid 1 of a namespace of its own, so it sees and can
  signal only its own processes, and when it ends (or is killed at the deadline) the kernel kills
  every process it started, daemonised or not.
- network namespace: no interface but a loopback that is down; nothing is reachable.
- mount namespace per worker: everything read-only but the scratch directory, a tmpfs at /tmp (also
  mounted at /dev/shm) emptied after each execution; /proc shows the worker's processes only.
- private file system: the worker pivots into a root of its own that holds the interpreter, its
  standard library, the system's /usr and libraries, a few files of /etc and harmless devices; the
  project's sources, every site-packages and dist-packages directory of the interpreter and the
  system, home directories and the rest of the host are not there. ``sys.executable`` is the
  interpreter's real path, so ``Limits.allow_exec`` programs can still start it.
- memory cgroup per worker: ``Limits.memory_bytes`` bounds the execution's processes together
  (``IsolationReport.memory_bound`` says ``"cgroup v1"`` or ``"cgroup v2"``); without one, it bounds
  each process alone (``"per-process rlimit"``).
- IPC namespace per execution: System V IPC and POSIX message queues do not outlive it.
- seccomp filter: denies sockets other than AF_UNIX, ptrace and reading other processes' memory,
  kernel and mount administration, new user namespaces, io_uring, bpf, keyrings and, unless
  ``Limits.allow_exec``, executing programs.

Missing layers (no user namespaces, not root, no pyseccomp) are dropped with an
:class:`IsolationWarning` and listed in the report's ``warnings``; ``Sandbox(require="strongest")``
or ``require="namespaces"`` raises :class:`IsolationUnavailable` instead.

Guaranteed, with every layer active: the program cannot reach the network, change files outside its
scratch directory, see or signal processes other than its own, keep any process alive after its run,
read the host's files beyond the interpreter and /usr, or use more than its limits. Not guaranteed:
protection from kernel vulnerabilities (the layers reduce what the program can reach, they do not
remove the kernel); a total memory limit across the program's processes without a memory cgroup
(each has ``memory_bytes``; at most ``processes`` of them); privacy of what /usr holds (read-only but
visible, like the interpreter: a Python bundled deep inside an application's directory there keeps
its packages). As pid 1 of its namespace, the program ignores signals it sends itself without a
handler, and ``os.getppid()`` is 0. The hash seed is fixed per worker, not per execution.
"""

from mrlm.envs.sandbox.api import (
    LAYERS,
    ExecutionResult,
    IsolationReport,
    IsolationUnavailable,
    IsolationWarning,
    Limits,
    Status,
)
from mrlm.envs.sandbox.runner import Sandbox

__all__ = [
    "LAYERS",
    "ExecutionResult",
    "IsolationReport",
    "IsolationUnavailable",
    "IsolationWarning",
    "Limits",
    "Sandbox",
    "Status",
]
