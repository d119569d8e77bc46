"""The Linux calls the fork server needs that the standard library lacks, through ctypes.

Every wrapper raises OSError (with errno) on failure, like the ``os`` module does.
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWTIME = 0x00000080
#: Every flag that makes clone/unshare create a namespace.
NAMESPACE_FLAGS = (
    CLONE_NEWNS,
    CLONE_NEWUTS,
    CLONE_NEWIPC,
    CLONE_NEWUSER,
    CLONE_NEWPID,
    CLONE_NEWNET,
    CLONE_NEWCGROUP,
    CLONE_NEWTIME,
)

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

_MNT_DETACH = 2
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYS_MOUNT_SETATTR = 442  # the same on every architecture (numbers from 424 on are shared)

_PR_SET_DUMPABLE = 4
_PR_SET_PDEATHSIG = 1
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_SECCOMP_MODE_FILTER = 2

#: capset(2) and pivot_root(2) have no glibc wrapper; their numbers differ per architecture.
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91, "ppc64le": 184, "s390x": 185, "riscv64": 91}
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.syscall.restype = ctypes.c_long
_libc.fflush.argtypes = [ctypes.c_void_p]


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(result: int, what: str) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; a no-op elsewhere).

    A process's resident pages are what forking it copies the page tables of and what exiting a
    fork unmaps: freed memory that the allocator keeps (from start-up work) costs every execution.
    """
    trim = getattr(_libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def unshare(flags: int) -> None:
    """Move the calling process into new namespaces (CLONE_NEWPID: its next child's)."""
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    """Join the namespace open at ``fd``."""
    _check(_libc.setns(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); ``source``/``fstype``/``data`` may be None where the call ignores them."""

    def raw(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(_libc.mount(raw(source), raw(target), raw(fstype), flags, raw(data)), f"mount {target}")


def unmount(target: str) -> None:
    """Detach the mount at ``target`` (lazily: it goes once nothing uses it)."""
    _check(_libc.umount2(os.fsencode(target), _MNT_DETACH), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    """Make ``new_root`` (a mount point) the root of this mount namespace; the old root goes to
    ``put_old`` (the same path as ``new_root`` stacks it on top, to be unmounted at once)."""
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {os.uname().machine}")
    result = _libc.syscall(
        ctypes.c_long(number), ctypes.c_char_p(os.fsencode(new_root)), ctypes.c_char_p(os.fsencode(put_old))
    )
    _check(result, "pivot_root")


def make_read_only_recursive(path: str) -> None:
    """Mark the mount at ``path`` and every mount below it read-only (mount_setattr, Linux 5.12)."""
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY)
    result = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.c_uint(_AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, "mount_setattr")


def make_writable(path: str) -> None:
    """Clear the read-only mark of the one mount at ``path`` (not of those below it)."""
    attr = _MountAttr(attr_clr=_MOUNT_ATTR_RDONLY)
    result = _libc.syscall(
        ctypes.c_long(_SYS_MOUNT_SETATTR),
        ctypes.c_int(_AT_FDCWD),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.c_uint(0),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, "mount_setattr")


def set_parent_death_signal(signum: int) -> None:
    """Have the kernel send ``signum`` to this process when its parent exits."""
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def set_not_dumpable() -> None:
    """Make this process non-dumpable: other processes of its uid, holding no capabilities, can no
    longer open its /proc entries (memory, descriptors, environment) or attach to it."""
    _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def set_child_subreaper() -> None:
    """Have orphaned descendants reparented to this process (not to init), to be reaped here."""
    _check(_libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(PR_SET_CHILD_SUBREAPER)")


def set_no_new_privs() -> None:
    """Forbid gaining privileges through execve (setuid binaries, file capabilities) for good."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


class SeccompProgram:
    """A compiled seccomp BPF program, kept in memory so a forked child can load it in one call."""

    def __init__(self, bpf: bytes) -> None:
        if not bpf or len(bpf) % 8:
            raise ValueError("a seccomp program is a non-empty sequence of 8-byte instructions")
        self._buffer = ctypes.create_string_buffer(bpf, len(bpf))
        self._fprog = _SockFprog(len(bpf) // 8, ctypes.cast(self._buffer, ctypes.c_void_p))

    def load(self) -> None:
        """Install the filter on the calling thread; needs no_new_privs or CAP_SYS_ADMIN."""
        result = _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(self._fprog), 0, 0)
        _check(result, "prctl(PR_SET_SECCOMP)")


def drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable capability sets of the calling thread."""
    machine = os.uname().machine
    number = _SYS_CAPSET.get(machine)
    if number is None:
        raise OSError(0, f"capset: unknown system call number on {machine}")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)), "capset")


def flush_c_stdio() -> None:
    """fflush(NULL): what exit(3) would write of C-level stdio buffers (ctypes printf, say)."""
    _libc.fflush(None)
