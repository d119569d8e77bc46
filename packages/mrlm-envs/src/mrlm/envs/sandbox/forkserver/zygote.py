"""A zygote: a copy of the fork server whose only job is to fork executions.

Why a separate process: forking write-protects every page of the forking process, and each page it
writes afterwards faults and is copied. The server does real work per request (JSON, polling,
replies); the zygote's loop touches a handful of objects. So the server hands each execution to a
zygote and keeps its own pages to itself. The zygote also does once what would otherwise cost every
execution: it loads the seccomp filter (for itself and every execution it forks) and prepares the
program's ``__main__`` module and ``sys.path`` (see :func:`program.prepare`).

Each execution gets new pid and IPC namespaces: the zygote unshares them before forking (its next
child is born into them, as pid 1) and returns to its own afterwards (a second unshare would fail).

Protocol over a SOCK_SEQPACKET socket pair, one message per line of this list:
server to zygote: ``run`` with the descriptors (job memfd, stdin, stdout, stderr, status pipe);
zygote to server: ``pid N`` with a pidfd of it where the kernel has them (or ``error ...``), then
``exit STATUS CPU_SECONDS`` once it is reaped (CPU seconds as RLIMIT_CPU counts them), which in a
pid namespace means once every process of the execution is gone. The server takes the socket
becoming readable as the sign of the exit.
"""

from __future__ import annotations

import array  # noqa: F401  (socket.send_fds/recv_fds import it late: loaded here before any program)
import contextlib
import fcntl
import marshal
import os
import signal
import socket
import time
from typing import NoReturn

from mrlm.envs.sandbox.forkserver import child, linux, program

#: Descriptors sent with each ``run``, in this order (see :func:`child.run`).
FDS_PER_RUN = 5
#: Descriptors below this one are kept taken in the zygote (see :func:`_keep_only`).
_FIRST_RECEIVED = 10


class ZygoteError(RuntimeError):
    """The zygote could not start, or died."""


class Zygote:
    """The server's handle on one zygote.

    Args:
        template: what every execution shares.
        seccomp: the filter the zygote loads for itself and its children, or None.
        namespaces: ``(CLONE_NEW... flag, fd of the worker's own namespace of that kind)`` for each
            kind of namespace every execution gets anew.
        scratch: the scratch directory when it is the same for every execution, else None.
    """

    def __init__(
        self,
        template: child.Template,
        seccomp: linux.SeccompProgram | None,
        namespaces: tuple[tuple[int, int], ...],
        scratch: str | None,
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pid = os.fork()
        if self.pid == 0:
            # Hold nothing of the server's: no pipe of a running execution, not the caller's channel.
            cgroup = [template.cgroup_fd] if template.cgroup_fd >= 0 else []
            kept = _keep_only([theirs.detach(), *(fd for _, fd in namespaces), *cgroup], template.max_fd)
            own_fds = kept[1 : 1 + len(namespaces)]
            own = tuple((flag, fd) for (flag, _), fd in zip(namespaces, own_fds, strict=True))
            if cgroup:
                template = template._replace(cgroup_fd=kept[-1])
            if scratch is not None:
                program.prepare(scratch, template.search_path)
            _serve(socket.socket(fileno=kept[0]), template, seccomp, own)
        theirs.close()
        self._socket = ours
        answer = self._receive()
        if answer != b"ready":
            self.close()
            raise ZygoteError(answer.decode(errors="replace"))

    def start(self, fds: list[int]) -> tuple[int, int]:
        """Fork an execution with these descriptors; returns its pid and a pidfd of it (or -1)."""
        try:
            socket.send_fds(self._socket, [b"run"], fds)
            message, pidfds, _, _ = socket.recv_fds(self._socket, 512, 1)
        except OSError as error:
            raise ZygoteError(f"the zygote is gone ({error})") from None
        kind, _, rest = message.partition(b" ")
        if kind != b"pid":
            for fd in pidfds:
                os.close(fd)
            raise ZygoteError(
                f"cannot fork the execution: {rest.decode(errors='replace') or 'the zygote is gone'}"
            )
        return int(rest), pidfds[0] if pidfds else -1

    def fileno(self) -> int:
        """Readable once the execution started last has been reaped (see :meth:`wait`)."""
        return self._socket.fileno()

    def wait(self) -> tuple[int, float]:
        """The wait status and CPU seconds (as RLIMIT_CPU counts them) of the execution started
        last, once it is reaped."""
        kind, _, rest = self._receive().partition(b" ")
        if kind != b"exit":
            raise ZygoteError(f"unexpected message from the zygote: {kind!r}")
        status, cpu = rest.split()
        return int(status), float(cpu)

    def close(self) -> None:
        self._socket.close()  # the zygote exits at end-of-file
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    def _receive(self) -> bytes:
        try:
            message = self._socket.recv(512)
        except OSError as error:
            raise ZygoteError(f"the zygote is gone ({error})") from None
        if not message:
            raise ZygoteError("the zygote is gone")
        return message


def _keep_only(fds: list[int], max_fd: int) -> list[int]:
    """Close every descriptor above 2 except ``fds``, which move to 3, 4, ...; returns their numbers.

    Descriptors up to 9 stay taken, so every descriptor received later is above 9 and an execution
    can put its own at 0 to 3 without first moving any out of the way.
    """
    first_free = 3 + len(fds)
    lifted = [fcntl.fcntl(fd, fcntl.F_DUPFD, _FIRST_RECEIVED) for fd in fds]  # clear of the targets
    for target, fd in enumerate(lifted, start=3):
        os.dup2(fd, target)
    os.closerange(first_free, max_fd)
    null = os.open(os.devnull, os.O_RDONLY)
    for placeholder in range(first_free, _FIRST_RECEIVED):
        if placeholder != null:
            os.dup2(null, placeholder)
    return list(range(3, first_free))


def _serve(
    control: socket.socket,
    template: child.Template,
    seccomp: linux.SeccompProgram | None,
    namespaces: tuple[tuple[int, int], ...],
) -> NoReturn:
    try:
        linux.set_parent_death_signal(signal.SIGKILL)
        try:
            linux.set_no_new_privs()
            if seccomp is not None:
                seccomp.load()
        except OSError as error:
            control.send(f"seccomp: {error}".encode())
            os._exit(1)
        control.send(b"ready")
        flags = 0
        for flag, _ in namespaces:
            flags |= flag
        while True:
            message, fds, _, _ = socket.recv_fds(control, 16, FDS_PER_RUN)
            if not message:
                os._exit(0)  # the server closed its end
            try:
                # Decoded here, before the fork: in the child, the new objects would each cost a
                # copied page; here their pages are ours alone again once the last child is gone.
                job = child.Job._make(marshal.loads(os.pread(fds[0], os.fstat(fds[0]).st_size, 0)))
                pid = _fork(template, job, fds[1:], flags, namespaces)
            except OSError as error:
                control.send(f"error {error}".encode())
                continue
            finally:
                for fd in fds:
                    os.close(fd)
            _send_pid(control, pid)
            # In a pid namespace, it exits once all its processes are gone. Its CPU-time clock is
            # read before it is reaped: the zombie's clock is the one RLIMIT_CPU was checked against.
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            cpu_seconds = _limit_clock(pid)
            _, status, usage = os.wait4(pid, 0)
            if cpu_seconds is None:
                cpu_seconds = usage.ru_utime + usage.ru_stime
            control.send(b"exit %d %r" % (status, cpu_seconds))
    except BaseException:
        os._exit(1)


def _limit_clock(pid: int) -> float | None:
    """Seconds on the clock that RLIMIT_CPU is checked against (user plus system time, charged in
    whole scheduler ticks to the process that holds the CPU when a tick comes), or None where the
    kernel will not give it. The run time that ``wait4`` reports can trail that clock by a quarter
    when short-lived neighbours keep taking the CPU between ticks, so it cannot tell whether the
    limit was reached."""
    profiling_clock = (~pid << 3) | 0  # the kernel's CPUCLOCK_PROF of the whole process ``pid``
    try:
        return time.clock_gettime(profiling_clock)
    except OSError:
        return None


def _send_pid(control: socket.socket, pid: int) -> None:
    """The pid, with a pidfd: it lets the server signal exactly this process, never a namesake."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # before Linux 5.3
        control.send(b"pid %d" % pid)
        return
    try:
        socket.send_fds(control, [b"pid %d" % pid], [pidfd])
    finally:
        os.close(pidfd)


def _fork(
    template: child.Template,
    job: child.Job,
    fds: list[int],
    flags: int,
    namespaces: tuple[tuple[int, int], ...],
) -> int:
    if flags:
        linux.unshare(flags)  # our next child is born into the new namespaces (pid 1 of its own)
    try:
        pid = os.fork()
    except OSError:
        _back_to_own(namespaces)
        raise
    if pid == 0:
        child.run(template, job, fds)  # never returns; it stays in the new namespaces
    _back_to_own(namespaces)
    return pid


def _back_to_own(namespaces: tuple[tuple[int, int], ...]) -> None:
    for flag, fd in namespaces:
        linux.setns(fd, flag)
