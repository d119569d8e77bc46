"""The process of one execution, forked from the fork server: set up, then become the program.

It is pid 1 of the execution's own pid namespace (when there is one; the zygote makes it, and a new
IPC namespace): when it exits the kernel kills everything else in the namespace, so nothing the
program started can outlive it. In order, it joins the worker's memory cgroup (where there is one),
drops to the sandbox uid, enters the scratch directory (the worker's tmpfs at /tmp, which the server
has filled and empties after each execution; or a fresh directory on disk, which it fills itself),
applies the rlimits and runs the source (see :mod:`program`). The seccomp filter is already in
place: it came with the fork from the zygote (see :mod:`zygote`).

Work here is kept to a minimum on purpose: every page of the inherited interpreter that this
process writes is copied first (copy-on-write), and those copies are most of what an execution
costs. So what can be prepared once is prepared by the server (:class:`Template`, the files) and
the zygote (the decoded :class:`Job`, ``__main__``).

A failed step is reported as one JSON line ``{"error": ..., "layer": ...}`` on the status pipe,
which the process closes just before running the program.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import types
from typing import NamedTuple, NoReturn

from mrlm.envs.sandbox.forkserver import cgroup, linux, program
from mrlm.envs.sandbox.forkserver import scratch as scratch_files

#: The fd of the status pipe while the process sets itself up (0-2 are the program's streams).
_STATUS_FD = 3


class Template(NamedTuple):
    """What every execution of a worker shares, prepared once by the server.

    Attributes:
        contained: each execution is pid 1 of its own pid namespace.
        private_scratch: the scratch directory is the worker's private tmpfs at /tmp.
        sandbox_uid: the uid programs run as, or None to keep the worker's uid.
        drop_capabilities: shed the user namespace's capabilities (when the uid stays).
        process_limit_extra: added to ``Limits.processes`` for RLIMIT_NPROC (processes of the same uid
            that are not the program's), or None where RLIMIT_NPROC cannot be used.
        search_path: ``sys.path`` of programs after their scratch directory.
        max_fd: descriptors from 4 up to this one are closed.
        cgroup_fd: where the process joins the worker's memory cgroup (see :mod:`cgroup`), or -1.
    """

    contained: bool
    private_scratch: bool
    sandbox_uid: int | None
    drop_capabilities: bool
    process_limit_extra: int | None
    search_path: tuple[str, ...]
    max_fd: int
    cgroup_fd: int = -1


class Job(NamedTuple):
    """One execution's particulars, sent by the server to the zygote marshalled in a memfd (marshal,
    not JSON: fewer objects to make, and it comes from the server, so it is safe to decode).

    Attributes:
        source: the program, UTF-8.
        code: the program compiled (see :func:`program.precompile`), or None.
        files: extra files for the scratch directory, as (relative name, UTF-8 content).
        scratch: the scratch directory as the program sees it.
        cpu_seconds, memory_bytes, file_size_bytes, open_files, processes: the limits.
    """

    source: bytes
    code: types.CodeType | None
    files: tuple[tuple[str, bytes], ...]
    scratch: str
    cpu_seconds: int
    memory_bytes: int
    file_size_bytes: int
    open_files: int
    processes: int


def run(template: Template, job: Job, fds: list[int]) -> NoReturn:
    """Set up the execution in this freshly forked process, then run the program; never returns.

    Args:
        template: what every execution shares.
        job: this execution's particulars.
        fds: the program's stdin, stdout and stderr, and the status pipe (all above 9, see zygote).
    """
    stdin_fd, stdout_fd, stderr_fd, status_fd = fds
    layer = "setup"
    try:
        os.dup2(stdin_fd, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stderr_fd, 2)
        os.dup2(status_fd, _STATUS_FD)
        if template.cgroup_fd >= 0:  # first: what the program forks is born in the cgroup too
            layer = "memory_cgroup"
            cgroup.join(template.cgroup_fd)
            layer = "setup"
        os.closerange(_STATUS_FD + 1, template.max_fd)  # the zygote's descriptors and the originals
        os.setsid()  # its own session and process group, not the worker's
        if not template.contained:  # in a pid namespace, the zygote's death ends it anyway
            linux.set_parent_death_signal(signal.SIGKILL)
        layer = "unprivileged_user"
        uid = template.sandbox_uid
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # leaving uid 0 clears every capability
        elif template.drop_capabilities:
            linux.drop_capabilities()
        layer = "scratch"
        scratch = job.scratch
        if not template.private_scratch:  # on disk: a fresh directory of its own, filled here
            os.mkdir(scratch, 0o700)
            os.chdir(scratch)
            scratch_files.write_files(job.files, job.source)
            os.environ["HOME"] = os.environ["TMPDIR"] = scratch
        else:  # the worker's tmpfs, which the server has filled
            os.chdir(scratch)
        layer = "rlimits"
        _apply_rlimits(template, job)
    except BaseException as error:
        try:
            message = {"error": f"{type(error).__name__}: {error}", "layer": layer}
            os.write(_STATUS_FD, (json.dumps(message) + "\n").encode())
        finally:
            os._exit(1)
    os.close(_STATUS_FD)
    source, code = job.source, job.code
    del job, fds
    program.run(source, code, scratch, template.search_path)


def _apply_rlimits(template: Template, job: Job) -> None:
    # CPU soft = hard: SIGKILL at the limit. As pid 1 of its namespace the program never gets the soft
    # limit's SIGXCPU (a namespace's init ignores signals it has no handler for).
    resource.setrlimit(resource.RLIMIT_CPU, (job.cpu_seconds, job.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (job.file_size_bytes, job.file_size_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (job.open_files, job.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if template.process_limit_extra is not None:
        processes = job.processes + template.process_limit_extra
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_AS, (job.memory_bytes, job.memory_bytes))
