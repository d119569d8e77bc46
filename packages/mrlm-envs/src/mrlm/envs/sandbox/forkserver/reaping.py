"""Ending what an execution left behind when there is no pid namespace to do it, and reaping."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def kill(pid: int, pidfd: int) -> None:
    """SIGKILL to the process, through its pidfd where there is one (never a namesake)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if pidfd >= 0:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def sweep(uid: int) -> None:
    """Kill every process of ``uid`` (which must be this worker's alone) from a helper that takes
    that uid: kill(-1) reaches exactly the uid's processes, and none can fork meanwhile (the kernel
    holds the task list), so one round is enough. Orphans among them are our children by then (we
    are a subreaper): reap them before returning."""
    helper = os.fork()
    if helper == 0:
        try:
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(helper, 0)
    deadline = time.monotonic() + 1.0
    while _processes_of(uid) and time.monotonic() < deadline:
        reap_strays()
        time.sleep(0.001)
    reap_strays()


def reap_strays() -> None:
    """Reap every child that has exited (orphans come to us), without waiting."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _processes_of(uid: int) -> list[int]:
    """Pids of the live or not yet reaped processes running as ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status", "rb") as status:
                    for line in status:
                        if line.startswith(b"Uid:"):
                            if int(line.split()[1]) == uid:
                                found.append(int(entry))
                            break
            except OSError:
                continue  # gone meanwhile
    return found
