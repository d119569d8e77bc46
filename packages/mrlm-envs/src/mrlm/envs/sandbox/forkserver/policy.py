"""The seccomp filter of sandboxed programs, compiled once per worker with libseccomp (pyseccomp).

The filter allows by default and denies, with EPERM, the calls untrusted Python has no business
making: networking, debugging other processes, kernel administration, new user namespaces, io_uring
(whose requests seccomp cannot see) and, unless the limits allow it, executing programs. Calls of
other ABIs (32-bit x86 on x86_64, say) kill the process: nothing here is written for them.

The filter is loaded once by a zygote (see :mod:`zygote`) and inherited by every execution it forks,
so the executions' own set-up runs under it: ``mount``, ``setns`` and ``unshare`` (other than of a
user namespace) stay allowed for that. The program cannot use them all the same: it holds no
capabilities, and without CAP_SYS_ADMIN the kernel refuses each of them at its first check.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from types import ModuleType
from typing import Any

from mrlm.envs.sandbox.forkserver import linux

#: Denied outright: what a program could use to reach beyond its sandbox or the kernel's guts.
DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    "fanotify_init",
    "iopl",
    "ioperm",
    "modify_ldt",
    "vhangup",
    "sethostname",
    "setdomainname",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
#: Denied unless ``Limits.allow_exec``.
EXEC = ("execve", "execveat")


def load_pyseccomp(path: str) -> ModuleType:
    """Import pyseccomp from its file: the worker runs without site-packages on sys.path."""
    import importlib.util  # here, in the helper process only (see compile_in_helper)

    spec = importlib.util.spec_from_file_location("pyseccomp", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load pyseccomp from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # raises RuntimeError when libseccomp.so is missing
    return module


#: The filter variants, as (allow_exec, deny_kill_all).
VARIANTS = ((False, False), (False, True), (True, False), (True, True))


def compile_in_helper(pyseccomp_path: str) -> dict[tuple[bool, bool], linux.SeccompProgram]:
    """Every variant, compiled in a throwaway child process.

    pyseccomp imports ctypes.util, which imports subprocess and threading; threading would then run
    an after-fork hook in every process the server forks, touching (so copying) dozens of pages each
    time. The helper keeps all of it out of the server.

    Raises:
        RuntimeError: pyseccomp or libseccomp could not be loaded, or a filter could not be built.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        payload: dict[str, Any]
        try:
            os.close(read_fd)
            seccomp = load_pyseccomp(pyseccomp_path)
            programs = {
                f"{int(allow_exec)}{int(deny_kill_all)}": compile_filter(
                    seccomp, allow_exec=allow_exec, deny_kill_all=deny_kill_all
                ).hex()
                for allow_exec, deny_kill_all in VARIANTS
            }
            payload = {"programs": programs}
        except BaseException as error:
            payload = {"error": f"{type(error).__name__}: {error}"}
        try:
            with os.fdopen(write_fd, "w") as sink:
                json.dump(payload, sink)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as source:
        text = source.read()
    os.waitpid(pid, 0)
    try:
        answer = json.loads(text)
    except ValueError:
        raise RuntimeError("the helper compiling the filter died") from None
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return {
        (key[0] == "1", key[1] == "1"): linux.SeccompProgram(bytes.fromhex(bpf))
        for key, bpf in answer["programs"].items()
    }


def compile_filter(seccomp: ModuleType, *, allow_exec: bool, deny_kill_all: bool) -> bytes:
    """Build the filter and export it as BPF.

    Args:
        seccomp: the pyseccomp module.
        allow_exec: leave execve/execveat allowed.
        deny_kill_all: also deny ``kill(-1, ...)``, for runs without a pid namespace to contain it.
    """
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED + (() if allow_exec else EXEC):
        _add(seccomp, rules, deny, name)
    # Sockets: only AF_UNIX (multiprocessing and socketpair use it; it reaches no network).
    for name in ("socket", "socketpair"):
        _add(seccomp, rules, deny, name, seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    # clone may not create namespaces, nor unshare a user namespace (the one kind an unprivileged
    # process may make); clone3 hides its flags in memory seccomp cannot read, so it is refused as
    # unknown, and the C library falls back to clone.
    for flag in linux.NAMESPACE_FLAGS:
        _add(seccomp, rules, deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    _add(
        seccomp,
        rules,
        deny,
        "unshare",
        seccomp.Arg(0, seccomp.MASKED_EQ, linux.CLONE_NEWUSER, linux.CLONE_NEWUSER),
    )
    _add(seccomp, rules, seccomp.ERRNO(errno.ENOSYS), "clone3")
    if deny_kill_all:
        _add(seccomp, rules, deny, "kill", seccomp.Arg(0, seccomp.MASKED_EQ, 0xFFFFFFFF, 0xFFFFFFFF))
    with os.fdopen(os.memfd_create("seccomp-bpf"), "w+b") as sink:
        rules.export_bpf(sink)
        sink.seek(0)
        return sink.read()


def _add(seccomp: ModuleType, rules: Any, action: int, name: str, *args: Any) -> None:
    if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0:
        return  # not a system call of this architecture or libseccomp version
    rules.add_rule(action, name, *args)
