"""The worker-wide parts of the fork server's start-up, one function per layer.

Each function tries its layer, records in the plan whether it is on (and why not), and returns what
the server keeps of it.
"""

from __future__ import annotations

import os

from mrlm.envs.sandbox.forkserver import linux, policy
from mrlm.envs.sandbox.forkserver import scratch as scratches
from mrlm.envs.sandbox.forkserver.plan import Plan


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


def private_mounts(plan: Plan, owner: int, size: int) -> scratches.PrivateScratch | None:
    """The worker's mount table: the scratch tmpfs (see :mod:`scratch`), a /proc of the worker's
    pid namespace, everything else read-only. Returns the scratch, or None without a mount
    namespace (executions then use directories on disk)."""
    if not plan.on("mount_namespace"):
        plan.give_up("read_only_filesystem", "needs the mount namespace")
        return None
    private = scratches.PrivateScratch(owner)
    try:
        private.mount(size)
    except OSError as error:
        plan.give_up("mount_namespace", f"cannot mount a private scratch ({error})")
        plan.give_up("read_only_filesystem", "needs the mount namespace")
        return None
    if plan.on("pid_namespace"):
        try:  # shows the worker's processes only, not the host's
            linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
        except OSError as error:
            plan.warnings.append(f"mount_namespace: no /proc of the worker's own ({error})")
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
