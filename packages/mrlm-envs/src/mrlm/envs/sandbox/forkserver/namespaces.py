"""Give a starting worker its own user, mount, network, pid and IPC namespaces, as far as the machine
allows.

Run once per worker, in its first process, before it forks the fork server (which becomes pid 1 of
the new pid namespace). Each layer that cannot be had is recorded in the plan with the reason.

User namespace mapping: started as root, the worker maps its uid 0 to the host uid ``uid_base`` and
uid 1, the uid programs run as, to ``uid_base + 1 + slot``: host uids that own nothing, one per
worker. Started as another user, only that user's own uid can be mapped, so programs run as it.
"""

from __future__ import annotations

import os
import socket

from mrlm.envs.sandbox.forkserver import exposure, linux
from mrlm.envs.sandbox.forkserver.plan import Plan

#: The uid programs run as inside a worker's user namespace (when started as root).
SANDBOX_UID = 1


def enter_namespaces(plan: Plan, needed_paths: list[str]) -> None:
    """Unshare the worker-wide namespaces and settle which uid programs will run as.

    Args:
        plan: where to record what is on and why something is off.
        needed_paths: directories the sandbox uid must be able to read (the interpreter's).
    """
    _enter_user_namespace(plan)
    may_unshare = plan.on("user_namespace") or plan.root_mode
    _unshare_the_others(plan, may_unshare)
    _expose_interpreter(plan, needed_paths)
    if plan.on("network_namespace"):
        interfaces = sorted(name for _, name in socket.if_nameindex())
        if interfaces != ["lo"]:
            plan.give_up("network_namespace", f"the new namespace has interfaces {interfaces}")
    if may_unshare:
        _private_hostname()
    _choose_sandbox_user(plan)


def _unshare_the_others(plan: Plan, may_unshare: bool) -> None:
    # The pid and IPC namespaces here are the worker's; each execution gets its own below them.
    for layer, flag in (
        ("mount_namespace", linux.CLONE_NEWNS),
        ("network_namespace", linux.CLONE_NEWNET),
        ("pid_namespace", linux.CLONE_NEWPID),
        ("ipc_namespace", linux.CLONE_NEWIPC),
    ):
        if not plan.wanted(layer):
            plan.give_up(layer, "")
        elif not may_unshare:
            plan.give_up(layer, "needs a user namespace or root")
        else:
            try:
                linux.unshare(flag)
                plan.layers[layer] = True
            except OSError as error:
                plan.give_up(layer, f"cannot create one ({error})")
    if plan.on("mount_namespace"):
        try:  # nothing mounted from here on may leak back to the host
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        except OSError as error:
            plan.give_up("mount_namespace", f"cannot make mounts private ({error})")


def _expose_interpreter(plan: Plan, needed_paths: list[str]) -> None:
    """Make the interpreter readable to the sandbox uid (see :mod:`exposure`), then (started as root)
    take the namespace's root uid in place of the host's."""
    hidden: exposure.Hidden = {}
    closed = plan.root_mode and exposure.has_closed_ancestors(needed_paths)
    if closed and plan.on("mount_namespace"):
        hidden = exposure.open_hidden(needed_paths)  # still with root's file access
    if plan.root_mode and plan.on("user_namespace") and (hidden or not closed):
        # Become the namespace's root (host uid uid_base) and shed root's supplementary groups,
        # which would otherwise still count on the host. (Not when the interpreter would become
        # unreadable to the worker itself: then it keeps root's uid, with powers only inside.)
        os.setresgid(0, 0, 0)
        os.setresuid(0, 0, 0)
        os.setgroups([])
    try:
        exposure.expose(hidden)
    except OSError as error:
        plan.warnings.append(
            f"unprivileged_user: the interpreter's files may be unreadable to programs ({error})"
        )
    if closed and not hidden and plan.wanted("unprivileged_user"):
        plan.warnings.append(
            "unprivileged_user: the interpreter lives in a private directory and there is no mount namespace "
            "to expose it: programs cannot import modules the worker has not loaded"
        )


def _enter_user_namespace(plan: Plan) -> None:
    if not plan.wanted("user_namespace"):
        plan.give_up("user_namespace", "")
        return
    try:
        if plan.root_mode:
            _enter_mapped_as_root(plan.config.uid_base, plan.config.slot)
        else:
            _enter_mapped_as_self()
        plan.layers["user_namespace"] = True
    except OSError as error:
        plan.give_up("user_namespace", f"cannot create one ({error})")


def _enter_mapped_as_root(uid_base: int, slot: int) -> None:
    """A process cannot map uids other than its own into its new namespace; a helper forked before
    unsharing still holds root's powers outside and writes the maps for it."""
    mapping = f"0 {uid_base} 1\n{SANDBOX_UID} {uid_base + 1 + slot} 1\n"
    go_read, go_write = os.pipe()
    done_read, done_write = os.pipe()
    helper = os.fork()
    if helper == 0:  # the helper: wait for the word, write the parent's maps, report
        os.close(go_write)
        os.close(done_read)
        result = b"ok"
        if os.read(go_read, 1) == b"1":
            try:
                for name in ("uid_map", "gid_map"):
                    with open(f"/proc/{os.getppid()}/{name}", "w") as handle:
                        handle.write(mapping)
            except OSError as error:
                result = str(error).encode()
        os.write(done_write, result)
        os._exit(0)
    os.close(go_read)
    os.close(done_write)
    try:
        linux.unshare(linux.CLONE_NEWUSER)
    except OSError:
        os.write(go_write, b"0")
        raise
    else:
        os.write(go_write, b"1")
        result = os.read(done_read, 4096)
    finally:
        os.close(go_write)
        os.waitpid(helper, 0)
        os.close(done_read)
    if result != b"ok":
        raise OSError(0, f"writing the uid map failed: {result.decode(errors='replace')}")


def _enter_mapped_as_self() -> None:
    uid, gid = os.geteuid(), os.getegid()
    linux.unshare(linux.CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("gid_map", f"0 {gid} 1\n"), ("uid_map", f"0 {uid} 1\n")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _private_hostname() -> None:
    try:
        linux.unshare(linux.CLONE_NEWUTS)
        socket.sethostname("sandbox")
    except OSError:
        pass  # the host name is not a protection, only tidiness


def _choose_sandbox_user(plan: Plan) -> None:
    if not plan.wanted("unprivileged_user"):
        plan.give_up("unprivileged_user", "")
    elif plan.root_mode:
        in_namespace = plan.on("user_namespace")
        plan.sandbox_uid = SANDBOX_UID if in_namespace else plan.config.uid_base + 1 + plan.config.slot
        plan.layers["unprivileged_user"] = True
    else:
        plan.give_up("unprivileged_user", "not started as root: programs run as the caller's own uid")
