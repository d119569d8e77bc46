"""The worker-wide parts of the fork server's start-up, one function per layer.

Each function tries its layer, records in the plan whether it is on (and why not), and returns what
the server keeps of it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from mrlm.envs.sandbox.forkserver import cgroup, linux, policy, rootfs
from mrlm.envs.sandbox.forkserver import scratch as scratches
from mrlm.envs.sandbox.forkserver.plan import Plan


def memory_cgroup(plan: Plan) -> None:
    """Give the worker a memory cgroup (see :mod:`cgroup`); run in its first process, before it
    leaves the host's user namespace."""
    if not plan.wanted("memory_cgroup"):
        plan.give_up("memory_cgroup", "")
        return
    try:
        plan.memory_cgroup = cgroup.create()
        plan.layers["memory_cgroup"] = True
    except (OSError, ValueError, IndexError) as error:  # (the latter two: /proc files not as expected)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        plan.give_up(
            "memory_cgroup",
            f"no memory cgroup ({reason}): memory_bytes bounds each process alone (RLIMIT_AS), "
            "not an execution's processes together",
        )


def execution_namespaces(plan: Plan) -> dict[str, tuple[int, int]]:
    """Each execution gets new pid and IPC namespaces, made by unshare in the zygote, which then
    returns to the worker's own (see :mod:`zygote`). That needs the worker's own namespaces to
    belong to its user namespace (or the worker to be root): tried once here.

    Returns:
        By layer, the CLONE_NEW... flag and a descriptor of the worker's own namespace.
    """
    found: dict[str, tuple[int, int]] = {}
    for layer, kind, flag in (
        ("pid_namespace", "pid", linux.CLONE_NEWPID),
        ("ipc_namespace", "ipc", linux.CLONE_NEWIPC),
    ):
        if not plan.on(layer):
            continue
        try:
            fd = os.open(f"/proc/self/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
            linux.unshare(flag)
            linux.setns(fd, flag)
            found[layer] = (flag, fd)
        except OSError as error:
            plan.give_up(layer, f"cannot make one per execution ({error})")
    return found


def seccomp_filters(plan: Plan) -> dict[tuple[bool, bool], linux.SeccompProgram]:
    """Every variant of the filter (see :func:`policy.compile_in_helper`), or none."""
    if not plan.wanted("seccomp"):
        plan.give_up("seccomp", "")
    elif plan.config.pyseccomp is None:
        plan.give_up("seccomp", "pyseccomp is not installed")
    else:
        try:
            filters = policy.compile_in_helper(plan.config.pyseccomp)
            plan.layers["seccomp"] = True
            return filters
        except (RuntimeError, OSError, ValueError) as error:
            plan.give_up("seccomp", f"cannot build the filter ({error})")
    return {}


def private_mounts(
    plan: Plan, owner: int, size: int, search_path: Sequence[str]
) -> scratches.PrivateScratch | None:
    """The worker's mount table: a root of its own (see :mod:`rootfs`), the scratch tmpfs (see
    :mod:`scratch`), a /proc of the worker's pid namespace, everything else read-only. Returns the
    scratch, or None without a mount namespace (executions then use directories on disk).

    With a root of its own, ``sys.executable`` becomes the interpreter's real path: the path the
    worker was started by (a virtual environment's link, say) is not in the new root."""
    if not plan.on("mount_namespace"):
        for layer in ("private_filesystem", "read_only_filesystem"):
            plan.give_up(layer, "needs the mount namespace")
        return None
    _private_root(plan, search_path)
    private = scratches.PrivateScratch(owner)
    try:
        private.mount(size)
    except OSError as error:
        plan.give_up("mount_namespace", f"cannot mount a private scratch ({error})")
        plan.give_up("read_only_filesystem", "needs the mount namespace")
        return None
    if not plan.wanted("read_only_filesystem"):
        plan.give_up("read_only_filesystem", "")
        return private
    try:
        linux.make_read_only_recursive("/")
        for writable in (scratches.PRIVATE, scratches.SHARED_MEMORY):
            linux.make_writable(writable)
        plan.layers["read_only_filesystem"] = True
    except OSError as error:
        plan.give_up("read_only_filesystem", f"cannot remount read-only ({error})")
    return private


def _private_root(plan: Plan, search_path: Sequence[str]) -> None:
    """Pivot into a root of the worker's own, or else mount a /proc of the worker's pid namespace
    over the host's."""
    want_own_proc = plan.on("pid_namespace")
    if not plan.wanted("private_filesystem"):
        plan.give_up("private_filesystem", "")
    else:
        executable = os.path.realpath(sys.executable)
        try:
            has_own_proc = rootfs.enter([executable, *search_path], plan.config.hide, want_own_proc)
        except OSError as error:
            plan.give_up("private_filesystem", f"cannot build a root file system of its own ({error})")
        else:
            plan.layers["private_filesystem"] = True
            sys.executable = sys._base_executable = executable  # type: ignore[attr-defined]
            sys.path_importer_cache.clear()  # the finders' listings of directories now out of sight
            if want_own_proc and not has_own_proc:
                plan.warnings.append("mount_namespace: no /proc of the worker's own")
            return
    if want_own_proc:
        try:  # shows the worker's processes only, not the host's
            linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
        except OSError as error:
            plan.warnings.append(f"mount_namespace: no /proc of the worker's own ({error})")
