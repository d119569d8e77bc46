"""The fork server: a pre-imported interpreter that runs one execution per request.

It runs single-threaded (forking is only safe without threads), as pid 1 of the worker's pid
namespace when there is one, so that if it dies every execution dies with it. Per request it has a
zygote (see :mod:`zygote`) fork the execution (see :mod:`child`), watches it (see :mod:`supervise`)
and answers with what happened (once the program has exited, or, for a request marked
``until_output_closed``, once it has closed its output: the rest of it is ended after the reply);
after a request marked ``prestart`` it forks that program again and holds it at its stdin for the
next request (see :meth:`ForkServer.prestart`). At start-up it tries every layer with a probe execution and drops,
with a warning, the ones this machine refuses.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import math
import os
import resource
import signal
import sys
import time
from typing import Any, NoReturn

from mrlm.envs.sandbox import protocol
from mrlm.envs.sandbox.forkserver import child, linux, packages, program, reaping, startup
from mrlm.envs.sandbox.forkserver import scratch as scratches
from mrlm.envs.sandbox.forkserver.launched import Launched, what_runs, widen_stdin_pipe, write_all
from mrlm.envs.sandbox.forkserver.plan import SWITCHABLE, Plan
from mrlm.envs.sandbox.forkserver.supervise import Stream, Target, Watch, supervise
from mrlm.envs.sandbox.forkserver.zygote import Zygote, ZygoteError

#: Limits of the start-up probe execution.
_PROBE_LIMITS = {
    "wall_time_s": 10.0,
    "cpu_time_s": 10.0,
    "memory_bytes": 1 << 30,
    "output_bytes": 1 << 16,
    "file_size_bytes": 1 << 20,
    "processes": 16,
    "open_files": 64,
    "scratch_bytes": 1 << 20,
    "allow_exec": False,
}
_PROBE = {"source": "import os\nos.getcwd()\n", "files": {}, "stdin": "", "limits": _PROBE_LIMITS}


def run(channel_in: int, channel_out: int, plan: Plan) -> NoReturn:
    """Prepare, say whether the server is ready, then serve until the caller closes the channel."""
    linux.set_parent_death_signal(signal.SIGKILL)
    linux.set_child_subreaper()  # without a pid namespace of our own, orphans still come to us
    host_pid = int(os.readlink("/proc/self"))  # /proc is still the host's: this is our pid there
    try:
        server = ForkServer(channel_in, channel_out, plan)
        server.prepare()
    except BaseException as error:
        ready = {"ready": False, "error": f"{type(error).__name__}: {error}", "warnings": plan.warnings}
        protocol.write_message(channel_out, ready)
        os._exit(1)
    protocol.write_message(
        channel_out,
        {
            "ready": True,
            "layers": plan.layers,
            "warnings": plan.warnings,
            "pid": host_pid,
            "memory_bound": plan.memory_bound(),
        },
    )
    server.serve()


class ForkServer:
    """Serves requests ``{source, files, stdin, limits}`` with replies (see :meth:`execute`)."""

    def __init__(self, channel_in: int, channel_out: int, plan: Plan) -> None:
        self.channel_in = channel_in
        self.channel_out = channel_out
        self.plan = plan
        self._search_path = tuple(sys.path)  # the stdlib of a ``-I -S`` interpreter
        self._template = self._make_template()
        self._execution_namespaces: dict[str, tuple[int, int]] = {}  # by layer: flag, own namespace
        self._filters: dict[tuple[bool, bool], linux.SeccompProgram] = {}
        self._zygotes: dict[bool, Zygote] = {}  # by allow_exec
        self._scratch: scratches.PrivateScratch | None = None  # with a mount namespace
        self._oom_kills = 0  # the memory cgroup's count after the last execution
        self._held: Launched | None = None  # a program started ahead (see prestart)
        self._unsettled: Launched | None = None  # answered at its output's end, not yet ended
        # Kept open, given to every execution: the job's memfd (rewritten each time; the zygote
        # reads it before forking) and /dev/null (the stdin of programs given none).
        self._job_file = os.memfd_create("job")
        self._null = os.open(os.devnull, os.O_RDONLY)

    # -- start-up -------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Try every layer the caller wants, keep what works, preload modules, freeze the heap."""
        plan = self.plan
        self._execution_namespaces = startup.execution_namespaces(plan)
        self._filters = startup.seccomp_filters(plan)
        for name in plan.config.preload:
            with contextlib.suppress(ImportError):  # only a speed-up
                packages.import_alone(name)
        # The programs' environment; only HOME and TMPDIR change per execution, and only on disk.
        os.environ.clear()
        scratch = scratches.PRIVATE if plan.on("mount_namespace") else plan.config.tmpdir
        os.environ.update(PATH="/usr/local/bin:/usr/bin:/bin", LANG="C.UTF-8", HOME=scratch, TMPDIR=scratch)
        self._scratch = startup.private_mounts(
            plan, self._programs_uid(), int(_PROBE_LIMITS["scratch_bytes"]), self._search_path
        )
        if plan.memory_cgroup is not None:
            self._oom_kills = plan.memory_cgroup.oom_kills()
        self._probe()
        self._close_zygotes()  # new ones will inherit the final state below
        gc.collect()
        gc.freeze()  # keep the collector from touching (and so copying) inherited objects in children
        linux.release_free_memory()  # 10.4 -> 7.7 MB resident here: forks are 10-15% cheaper
        self._zygote(allow_exec=False)

    def _programs_uid(self) -> int:
        uid = self._template.sandbox_uid
        return uid if uid is not None else os.getuid()

    def _probe(self) -> None:
        """Run a trivial program; on a failed layer, drop it and try again."""
        for _ in range(len(SWITCHABLE) + 2):
            self._template = self._make_template()
            self._close_zygotes()
            if self._scratch is not None:  # the uid programs run as may have changed
                self._scratch.change_owner(self._programs_uid())
            reply = self.execute(_PROBE)
            error, layer = reply["error"], reply["layer"]
            if error is None:
                if reply["exit_code"] != 0:
                    raise RuntimeError(f"the probe program failed: {reply['stderr'][-2000:]}")
                return
            if layer in SWITCHABLE and self.plan.on(layer):
                self.plan.give_up(layer, f"unavailable here ({error})")
            else:
                raise RuntimeError(f"cannot run programs: {error}")
        raise RuntimeError("cannot run programs: the probe kept failing")

    def _make_template(self) -> child.Template:
        plan = self.plan
        uid = plan.sandbox_uid if plan.on("unprivileged_user") else None
        if uid is not None:
            extra: int | None = 0  # a uid of its own: only the program's processes count
        elif plan.on("user_namespace"):
            extra = 2  # the namespace's only uid: the launcher and the server count too
        else:
            extra = None  # the caller's own uid, shared with everything else it runs
        return child.Template(
            contained=plan.on("pid_namespace"),
            private_scratch=plan.on("mount_namespace"),
            sandbox_uid=uid,
            drop_capabilities=uid is None,
            process_limit_extra=extra,
            search_path=self._search_path,
            max_fd=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            cgroup_fd=plan.memory_cgroup.join_fd if plan.memory_cgroup and plan.on("memory_cgroup") else -1,
        )

    def _zygote(self, allow_exec: bool) -> Zygote:
        """The zygote for this exec policy, started if need be."""
        zygote = self._zygotes.get(allow_exec)
        if zygote is None:
            seccomp = None
            if self.plan.on("seccomp"):
                seccomp = self._filters[allow_exec, not self.plan.on("pid_namespace")]
            namespaces = tuple(
                self._execution_namespaces[layer]
                for layer in self._execution_namespaces
                if self.plan.on(layer)
            )
            scratch = scratches.PRIVATE if self._template.private_scratch else None
            zygote = Zygote(self._template, seccomp, namespaces, scratch)
            self._zygotes[allow_exec] = zygote
        return zygote

    def _close_zygotes(self) -> None:
        zygotes, self._zygotes = self._zygotes, {}
        for zygote in zygotes.values():
            zygote.close()

    # -- serving --------------------------------------------------------------------------------

    def serve(self) -> NoReturn:
        """Answer requests one at a time until the caller closes the channel (or leaves mid-run)."""
        while True:
            reaping.reap_strays()
            try:
                request = protocol.read_message(self.channel_in)
            except protocol.ChannelClosed:
                os._exit(0)
            try:
                reply = self.execute(request)
            except Exception as error:  # a bug here must not take the worker down
                reply = {"error": f"the worker failed: {type(error).__name__}: {error}", "layer": None}
            if reply.pop("caller_gone", False):
                os._exit(0)
            try:
                protocol.write_message(self.channel_out, reply)
            except OSError:
                os._exit(0)
            try:
                self.settle()
            except Exception:  # its zygote is dropped; the next execution starts a new one
                self._unsettled = None
            if request.get("prestart") is True:
                try:
                    self.prestart(request)
                except Exception:  # only a speed-up: the next request starts its own
                    self._held = None

    def execute(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one program; the reply holds its exit status or signal, output and what went wrong.

        A program started ahead for this very request (see :meth:`prestart`) gets its stdin and
        runs on from where it waits; any other started-ahead program is ended first.
        """
        self.settle()
        held, self._held = self._held, None
        stdin = request.get("stdin", "").encode()
        if held is not None and not held.serves(request, stdin):
            self._discard(held)
            held = None
        launched = held if held is not None else self._launch(request, stdin)
        if isinstance(launched, dict):
            return launched  # it could not start
        return self._finish(launched, stdin)

    def prestart(self, request: dict[str, Any]) -> None:
        """Start ``request``'s program again now, ahead of the request to run it, and hold it: it
        runs up to its first read of stdin (a pipe, written once the request comes) and the next
        :meth:`execute` of the same program, files and limits takes it from there. Its fork and
        start-up then overlap with whatever the caller does in between. Nothing is held when it
        cannot start."""
        launched = self._launch(request, None)
        if isinstance(launched, Launched):
            self._held = launched

    def _launch(self, request: dict[str, Any], stdin: bytes | None) -> Launched | dict[str, Any]:
        """Fork the program of ``request``; with ``stdin`` None its stdin is a pipe that stays open
        until :meth:`_finish` writes it. Returns the started execution, or the error reply."""
        limits = request["limits"]
        allow_exec = bool(limits["allow_exec"])
        private = self._scratch
        if private is not None:
            private.resize(int(limits["scratch_bytes"]))
        scratch = scratches.PRIVATE if private is not None else scratches.on_disk(self.plan.config.tmpdir)
        memory = self.plan.memory_cgroup if self._template.cgroup_fd >= 0 else None
        if memory is not None:
            try:
                memory.set_limit(int(limits["memory_bytes"]))
            except OSError as error:
                return {"error": f"cannot set the memory limit ({error})", "layer": "memory_cgroup"}
        source = request["source"].encode()
        start = time.monotonic()  # the wall-time clock includes compiling here
        job = child.Job(
            source=source,
            code=program.precompile(source, os.path.join(scratch, program.MAIN)),
            files=tuple((name, text.encode()) for name, text in (request.get("files") or {}).items()),
            scratch=scratch,
            cpu_seconds=max(1, math.ceil(limits["cpu_time_s"])),
            memory_bytes=int(limits["memory_bytes"]),
            file_size_bytes=int(limits["file_size_bytes"]),
            open_files=int(limits["open_files"]),
            processes=int(limits["processes"]),
        )
        opened: list[int] = []
        launched: Launched | None = None
        try:
            if private is not None:  # filled here, where it costs no copied pages
                try:
                    private.fill(job.files, job.source)
                except OSError as error:
                    return {"error": f"cannot write the program's files: {error}", "layer": "scratch"}
            _rewrite(self._job_file, marshal.dumps(tuple(job)))  # from us: marshal is safe here
            stdin_write, stdin_room = -1, 0
            if stdin is None:  # written when the request comes
                stdin_fd, stdin_write = os.pipe()
                opened += [stdin_fd, stdin_write]
                stdin_room = widen_stdin_pipe(stdin_write)
            elif stdin:
                stdin_fd = os.memfd_create("stdin")
                opened.append(stdin_fd)
                _rewrite(stdin_fd, stdin)
            else:  # /dev/null: at once end-of-file, like an empty memfd but without making one
                stdin_fd = self._null
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            status_read, status_write = os.pipe()
            opened += [out_read, out_write, err_read, err_write, status_read, status_write]
            for_child = [self._job_file, stdin_fd, out_write, err_write, status_write]
            try:
                zygote = self._zygote(allow_exec)
                pid, pidfd = zygote.start(for_child)
            except ZygoteError as error:
                self._drop_zygote(allow_exec)
                layer = "seccomp" if str(error).startswith("seccomp") else None
                return {"error": str(error), "layer": layer, "caller_gone": False}
            if pidfd >= 0:
                opened.append(pidfd)
            for fd in (out_write, err_write, status_write, *([stdin_fd] if stdin_write >= 0 else [])):
                os.close(fd)
                opened.remove(fd)
            launched = Launched(
                request=what_runs(request),
                allow_exec=allow_exec,
                zygote=zygote,
                pid=pid,
                pidfd=pidfd,
                start=start,
                stdin_write=stdin_write,
                stdin_room=stdin_room,
                out_read=out_read,
                err_read=err_read,
                status_read=status_read,
                scratch=scratch,
                memory=memory,
                opened=opened,
            )
            return launched
        finally:
            if launched is None:
                self._clean_up(opened, scratch)

    def _finish(self, launched: Launched, stdin: bytes) -> dict[str, Any]:
        """Give a started execution its stdin (when it waits for it), watch it to its end, reply.

        A request marked ``until_output_closed`` is answered once the program has closed its output,
        exited or not; what is left of it is ended by :meth:`settle`, after the reply is sent.
        """
        limits = launched.request["limits"]
        zygote, pid, pidfd = launched.zygote, launched.pid, launched.pidfd
        contained = self.plan.on("pid_namespace")
        start = launched.start
        settled = True
        try:
            if launched.stdin_write >= 0:
                start = time.monotonic()  # its wall time starts now, not when it was started ahead
                with contextlib.suppress(BrokenPipeError):  # it closed its stdin: its business
                    write_all(launched.stdin_write, stdin)  # fits: the pipe holds it all
                os.close(launched.stdin_write)
                launched.opened.remove(launched.stdin_write)
            try:
                target = Target(zygote.fileno(), lambda: self._end(pid, pidfd, contained), contained)
                watch = supervise(
                    target,
                    Stream(launched.out_read, limits["output_bytes"]),
                    Stream(launched.err_read, limits["output_bytes"]),
                    launched.status_read,
                    self.channel_in,
                    start + limits["wall_time_s"],
                    until_output_closed=launched.request.get("until_output_closed") is True,
                )
                # With a pid namespace, the zygote answers once all the execution's processes are gone.
                status, cpu_time = zygote.wait() if watch.exited else (None, None)
            except BaseException:
                # The zygote's messages can no longer be trusted to line up: start afresh.
                self._end(pid, pidfd, contained)
                self._drop_zygote(launched.allow_exec)
                raise
            duration = time.monotonic() - start
            oom_killed = False
            memory = launched.memory
            if memory is not None:  # the OOM killer ended one of the execution's processes
                oom_kills = memory.oom_kills()
                oom_killed = oom_kills > self._oom_kills
                if watch.exited:
                    self._oom_kills = oom_kills
            if not watch.exited:
                settled, self._unsettled = False, launched
        finally:
            if settled:
                self._clean_up(launched.opened, launched.scratch)
        return _reply(watch, status, cpu_time, duration, oom_killed)

    def settle(self) -> None:
        """End the execution answered at its output's end (see :meth:`_finish`), if there is one:
        kill what is left of it, wait for the zygote to reap it, empty its scratch directory."""
        launched, self._unsettled = self._unsettled, None
        if launched is not None:
            self._discard(launched)

    def _discard(self, launched: Launched) -> None:
        """End an execution still running (started ahead for a request that did not come, or
        answered at its output's end): kill it, wait until it has been reaped, clean up."""
        try:
            self._end(launched.pid, launched.pidfd, self.plan.on("pid_namespace"))
            try:
                launched.zygote.wait()
            except ZygoteError:
                self._drop_zygote(launched.allow_exec)
            if self.plan.memory_cgroup is not None and launched.memory is not None:
                self._oom_kills = launched.memory.oom_kills()
        finally:
            self._clean_up(launched.opened, launched.scratch)

    def _clean_up(self, opened: list[int], scratch: str) -> None:
        for fd in opened:
            os.close(fd)
        opened.clear()
        if self._scratch is not None:
            self._scratch.empty()
        else:
            scratches.remove_tree(scratch)

    def _drop_zygote(self, allow_exec: bool) -> None:
        zygote = self._zygotes.pop(allow_exec, None)
        if zygote is not None:
            zygote.close()

    def _end(self, pid: int, pidfd: int, contained: bool) -> None:
        """Contained, killing pid 1 kills its namespace; otherwise also its session and the uid."""
        reaping.kill(pid, pidfd)
        if not contained:
            reaping.kill_group(pid)  # it called setsid
            uid = self.plan.sandbox_uid if self.plan.on("unprivileged_user") else None
            if uid is not None:
                reaping.sweep(uid)


def _reply(
    watch: Watch, status: int | None, cpu_time: float | None, duration: float, oom_killed: bool
) -> dict[str, Any]:
    """The reply for an execution; ``status`` is its wait status, None when it was answered at its
    output's end without waiting for it to exit."""
    error = layer = None
    for message in watch.messages:
        if "error" in message:
            error, layer = str(message["error"]), message.get("layer")
            break
    exit_code = signum = None
    if status is not None and os.WIFEXITED(status):
        exit_code = os.WEXITSTATUS(status)
    elif status is not None and os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
    return {
        "exit_code": exit_code,
        "signal": signum,
        "cpu_time": cpu_time,
        "timed_out": watch.timed_out,
        "output_exceeded": watch.output_exceeded,
        "stdout": watch.stdout.text(),
        "stderr": watch.stderr.text(),
        "truncated": watch.stdout.truncated or watch.stderr.truncated,
        "duration": duration,
        "error": error,
        "layer": layer,
        "caller_gone": watch.caller_gone,
        "oom_killed": oom_killed,
        "exited": watch.exited,
    }


def _rewrite(fd: int, content: bytes) -> None:
    """Make the in-memory file ``fd`` hold ``content``, positioned at its start (as stdin, the
    program reads it, then gets end-of-file, never a hang)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    write_all(fd, content)
    os.lseek(fd, 0, os.SEEK_SET)
