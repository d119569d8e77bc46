"""A memory cgroup per worker: it bounds the memory of one execution, all its processes together.

RLIMIT_AS bounds each process alone, so a program that forks could use ``Limits.processes`` times
``Limits.memory_bytes``. Where the caller may make a memory cgroup, each worker gets one of its own
(an execution runs alone in its worker): every execution's first process joins it before the
program starts, so whatever it forks is born inside, and its limit is the execution's
``memory_bytes`` (written only when it changes). Past the limit the kernel's OOM killer ends a
process of the execution; the cgroup's count of OOM kills tells the worker it happened.

cgroup v2 (``memory.max``, no swap) where the memory controller sits on the unified hierarchy and is
enabled for the children of the caller's cgroup; else cgroup v1 (``memory.limit_in_bytes`` and,
where swap is accounted, ``memory.memsw.limit_in_bytes``). The cgroup is a child of the caller's
own, named after the worker's first process, which makes it before leaving the host's user
namespace and opens then every file of it the worker needs: neither the uid it becomes nor its
private root file system could reach them later. A janitor process forked at the same time removes
the cgroup once every process of the worker is gone, however the worker ended; cgroups of workers
whose janitor was killed too are swept away when the next worker starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time

#: Names of the cgroups of workers: this prefix, then the host pid of the worker's first process.
PREFIX = "mrlm-sandbox-"
V1 = "cgroup v1"
V2 = "cgroup v2"
#: How long the janitor retries while the last processes of the worker are still exiting.
_REMOVAL_WAIT_S = 10.0


class MemoryCgroup:
    """An open memory cgroup: descriptors of its files, usable whatever the uid and root later are.

    Attributes:
        version: :data:`V1` or :data:`V2`.
        path: where it is, as the host sees it.
        join_fd: a process writing ``b"0"`` here moves itself into the cgroup.
    """

    def __init__(self, version: str, path: str) -> None:
        self.version = version
        self.path = path
        names = ("tasks", "memory.limit_in_bytes", "memory.oom_control")
        if version == V2:
            names = ("cgroup.procs", "memory.max", "memory.events")
        self.join_fd = _open(os.path.join(path, names[0]), os.O_WRONLY)
        self._limit_fd = _open(os.path.join(path, names[1]), os.O_WRONLY)
        self._events_fd = _open(os.path.join(path, names[2]), os.O_RDONLY)
        self._swap_fd = -1
        if version == V1 and os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
            self._swap_fd = _open(os.path.join(path, "memory.memsw.limit_in_bytes"), os.O_WRONLY)
        elif version == V2 and os.path.exists(os.path.join(path, "memory.swap.max")):
            with contextlib.suppress(OSError):  # no swap to bound where it is refused
                _write_at(_open(os.path.join(path, "memory.swap.max"), os.O_WRONLY), b"0", close=True)
        self._limit: int | None = None
        # The janitor (see create) and the write end of its pipe, held while the worker lives.
        self._janitor = (-1, -1)

    def set_limit(self, size: int) -> None:
        """Bound the memory (and, v1, memory plus swap) of the processes inside to ``size`` bytes.

        Raises:
            OSError: the kernel refused (say, more than ``size`` is in use and cannot be reclaimed).
        """
        if size == self._limit:
            return
        self._limit = None
        value = str(size).encode()
        if self._swap_fd < 0:
            _write_at(self._limit_fd, value)
        else:
            try:  # v1 wants memory <= memory+swap at every step: lowering, memory goes first...
                _write_at(self._limit_fd, value)
                _write_at(self._swap_fd, value)
            except OSError:  # ...raising, memory+swap does
                _write_at(self._swap_fd, value)
                _write_at(self._limit_fd, value)
        self._limit = size

    def release(self) -> None:
        """Let the janitor remove the cgroup now, and wait for it; call once every other process of
        the worker is gone (else it removes the cgroup when they are)."""
        pid, fd = self._janitor
        if pid > 0:
            self._janitor = (-1, -1)
            os.close(fd)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def oom_kills(self) -> int:
        """How many processes the OOM killer has ended in the cgroup so far (0 where not counted)."""
        for line in os.pread(self._events_fd, 4096, 0).splitlines():
            name, _, count = line.partition(b" ")
            if name == b"oom_kill":
                return int(count)
        return 0


def create() -> MemoryCgroup:
    """Make and open the cgroup of the calling process's worker, and start its janitor.

    Raises:
        OSError: no memory cgroup can be made here, with the reason.
    """
    version, parent = locate()
    _sweep(parent)
    path = os.path.join(parent, f"{PREFIX}{os.getpid()}")
    try:
        os.mkdir(path, 0o755)
    except OSError as error:
        raise OSError(error.errno, f"cannot make a cgroup in {parent} ({error.strerror})") from None
    try:
        cgroup = MemoryCgroup(version, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise
    cgroup._janitor = _start_janitor(path)
    return cgroup


def locate() -> tuple[str, str]:
    """The hierarchy with the memory controller, and the calling process's cgroup directory there.

    Raises:
        OSError: no memory controller is mounted, the process's cgroup is out of sight, or (v2)
            memory is not enabled for its children.
    """
    own: dict[str, str] = {}  # controller ("" for the unified hierarchy): cgroup path
    with open("/proc/self/cgroup", encoding="utf-8") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    v1_mount = v2_mount = None
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            fields = line.split()
            separator = fields.index("-")
            fstype, options = fields[separator + 1], fields[separator + 3].split(",")
            mount = (_unescape(fields[3]), _unescape(fields[4]))
            if fstype == "cgroup" and "memory" in options and v1_mount is None:
                v1_mount = mount
            elif fstype == "cgroup2" and v2_mount is None:
                v2_mount = mount
    if v1_mount is not None and "memory" in own:
        return V1, _directory(v1_mount, own["memory"])
    if v2_mount is None or "" not in own:
        raise OSError(errno.ENOENT, "no memory cgroup controller is mounted")
    directory = _directory(v2_mount, own[""])
    if "memory" not in _read(os.path.join(directory, "cgroup.controllers")).split():
        raise OSError(errno.ENOENT, "the memory controller is not available in this cgroup v2 subtree")
    if "memory" not in _read(os.path.join(directory, "cgroup.subtree_control")).split():
        try:
            with open(os.path.join(directory, "cgroup.subtree_control"), "w") as control:
                control.write("+memory")
        except OSError as error:  # EBUSY: the cgroup holds processes; EACCES: not delegated to us
            raise OSError(
                error.errno,
                f"cgroup v2: cannot enable the memory controller below {directory} ({error.strerror})",
            ) from None
    return V2, directory


def join(cgroup_fd: int) -> None:
    """Move the calling process into the cgroup whose ``join_fd`` is ``cgroup_fd``."""
    os.write(cgroup_fd, b"0")


def _directory(mount: tuple[str, str], path: str) -> str:
    """Where the cgroup ``path`` of a hierarchy is, given the hierarchy's (root, mount point)."""
    root, point = mount
    if root == "/":
        return os.path.normpath(point + path)
    if path == root or path.startswith(root + "/"):
        return os.path.normpath(point + path[len(root) :])
    raise OSError(errno.ENOENT, f"this process's cgroup {path} is outside the mounted {root}")


def _sweep(parent: str) -> None:
    """Remove the cgroups of workers that are gone (empty ones only: the kernel refuses others)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX) :]
        if name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(parent, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _start_janitor(path: str) -> tuple[int, int]:
    """Fork a process that removes ``path`` once every holder of a pipe's write end has exited: the
    caller and what it forks from now on (the fork server; not the zygotes, which close it).
    Returns the janitor's pid and the write end."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(read_fd, 3)
            os.closerange(4, os.sysconf("SC_OPEN_MAX"))  # above all, not the caller's channel
            while os.read(3, 1):
                pass
            deadline = time.monotonic() + _REMOVAL_WAIT_S
            while True:
                try:
                    os.rmdir(path)
                    break
                except OSError as error:  # EBUSY: processes are still on their way out
                    if error.errno != errno.EBUSY or time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
        finally:
            os._exit(0)
    os.close(read_fd)
    return pid, write_fd


def _open(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_CLOEXEC)


def _write_at(fd: int, data: bytes, close: bool = False) -> None:
    try:
        os.pwrite(fd, data, 0)
    finally:
        if close:
            os.close(fd)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    for escape, character in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(escape, character)
    return field
