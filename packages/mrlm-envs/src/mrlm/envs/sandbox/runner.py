"""The sandbox: run untrusted Python in a separate, limited, isolated process and report what happened.

:class:`Sandbox` hands each execution to a pool of pre-started fork-server workers (see
:mod:`mrlm.envs.sandbox.forkserver`); a fresh process is forked per execution from a warm
interpreter, which is what makes it fast.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from mrlm.envs.sandbox.api import (
    ExecutionResult,
    IsolationReport,
    IsolationUnavailable,
    IsolationWarning,
    Limits,
    Requirement,
)
from mrlm.envs.sandbox.forkserver.plan import SWITCHABLE
from mrlm.envs.sandbox.outcome import sandbox_error, to_result
from mrlm.envs.sandbox.pool import MAX_WORKERS, WorkerPool
from mrlm.envs.sandbox.request import build_request
from mrlm.envs.sandbox.worker import WorkerError

#: How long past its wall-time limit an execution may take before its worker counts as hung.
_REPLY_GRACE_S = 15.0

_shared: Sandbox | None = None
_shared_lock = threading.Lock()


class Sandbox:
    """Runs Python source under :class:`Limits`, never in the caller's process. Thread-safe.

    Workers start on first use (or when :attr:`isolation` is read) and stop with :meth:`close`, at
    the end of a ``with`` block, or when the process exits.

    Args:
        limits: default limits of each execution.
        workers: concurrent executions (one worker process each); default: the usable CPU cores
            plus two, since a worker spends part of each execution waiting on its processes.
        require: the isolation demanded: ``"none"`` (default) runs with whatever the machine allows
            and warns (:class:`IsolationWarning`) about what is missing; ``"namespaces"`` and
            ``"strongest"`` raise :class:`IsolationUnavailable` here, at construction, if unmet.
        disable: layers to leave off (names of :class:`IsolationReport` fields), for debugging and
            for testing the fallbacks; each shows up in the report's warnings.
        python: the interpreter that runs the code (this one by default).

    Raises:
        ValueError: bad ``workers``, ``require`` or ``disable``.
        IsolationUnavailable: ``require`` cannot be met here.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        workers: int | None = None,
        require: Requirement = "none",
        disable: Iterable[str] = (),
        python: str = sys.executable,
    ) -> None:
        if require not in ("strongest", "namespaces", "none"):
            raise ValueError(f"require must be 'strongest', 'namespaces' or 'none', got {require!r}")
        self.disable = tuple(sorted(set(disable)))
        unknown = [name for name in self.disable if name not in SWITCHABLE]
        if unknown:
            raise ValueError(f"cannot disable {unknown}: the layers that can be are {list(SWITCHABLE)}")
        self.limits = limits or Limits()
        self.workers = workers if workers is not None else min(_usable_cores() + 2, MAX_WORKERS)
        self.python = python
        self.require: Requirement = require
        self._pool = WorkerPool(self.workers, python, self.disable)
        self._lock = threading.Lock()
        self._warned = False
        if require != "none":
            report = self.isolation
            missing = report.missing(require)
            if missing:
                self.close()
                details = "; ".join(report.warnings) or "no reason given"
                raise IsolationUnavailable(
                    f"require={require!r} needs {', '.join(missing)}, unavailable here: {details}"
                )

    @classmethod
    def shared(cls) -> Sandbox:
        """The process-wide sandbox with default settings, started on first use; never close it."""
        global _shared
        with _shared_lock:
            if _shared is None or _shared._pool.owner_pid != os.getpid():
                _shared = cls()
            return _shared

    @property
    def isolation(self) -> IsolationReport:
        """Which layers protect executions here (starts the workers if they are not running)."""
        pool = self._current_pool()
        try:
            report = pool.start()
        except WorkerError as error:
            return IsolationReport(
                separate_process=True,
                rlimits=False,
                user_namespace=False,
                network_namespace=False,
                pid_namespace=False,
                seccomp=False,
                warnings=(f"the sandbox workers cannot start: {error}",),
            )
        self._warn_once(report)
        return report

    def run(
        self,
        source: str,
        *,
        stdin: str = "",
        files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
        prestart: bool = False,
        until_output_closed: bool = False,
    ) -> ExecutionResult:
        """Run ``source`` as the script ``main.py`` in a fresh scratch directory and report the outcome.

        Args:
            source: the program.
            stdin: its standard input (then end-of-file).
            files: more files for the scratch directory, by relative name (the program can import
                the ``.py`` ones: the scratch directory is first on ``sys.path``).
            limits: this execution's limits (default: the sandbox's).
            prestart: once this run is over, the worker starts the same program again (same files
                and limits, in a fresh process as always) and lets it run up to its first read of
                stdin; a later run of that program on that worker gets its stdin there and goes on,
                its fork and start-up already done (any other run ends it first). Its wall time
                counts from that later run's request; every other limit holds from its start (a
                held program that spins is killed at its CPU limit). Only for programs whose work
                before reading stdin is their own preparation: that part runs before it is asked
                for, and may run for nothing. A stdin larger than the worker's pipe (usually 1 MiB)
                starts afresh.
            until_output_closed: return as soon as the program has closed its stdout and stderr
                (all of its processes), without waiting for it to exit: for programs whose output
                is their whole result. The result's ``exit_code`` and ``signal`` are then None and
                its status is OK unless a limit was reached first (or, with a memory cgroup, one
                of its processes was killed for memory); the worker ends what is left of the
                program before its next execution. Saves the program's exit (about a millisecond
                for a Python process) from the wait for the result.

        Raises:
            ValueError: a file name escapes the scratch directory or the files are too large.
            TypeError: source, stdin or a file's content is not a str.
        """
        limits = limits or self.limits
        request = build_request(source, stdin, files, limits)
        if prestart:
            request["prestart"] = True
        if until_output_closed:
            request["until_output_closed"] = True
        pool = self._current_pool()
        try:
            self._warn_once(pool.start())
            reply = pool.execute(request, timeout=limits.wall_time_s + _REPLY_GRACE_S)
        except WorkerError as error:
            return sandbox_error(str(error))
        return to_result(reply, limits)

    def run_many(
        self, sources: Iterable[str], *, stdin: str = "", limits: Limits | None = None
    ) -> list[ExecutionResult]:
        """Run several programs concurrently (one per worker at a time); results in input order."""
        with ThreadPoolExecutor(max_workers=self.workers) as executor:
            return list(executor.map(lambda source: self.run(source, stdin=stdin, limits=limits), sources))

    def worker_pids(self) -> list[int]:
        """Host pids of the running worker processes (for monitoring; killing one is survivable)."""
        return self._pool.pids()

    def close(self) -> None:
        """Stop the workers. Running executions are killed; later runs raise RuntimeError."""
        self._pool.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _current_pool(self) -> WorkerPool:
        """The pool, replaced after a fork: a child must not talk to its parent's workers."""
        if self._pool.owner_pid != os.getpid():
            with self._lock:
                if self._pool.owner_pid != os.getpid():
                    self._pool = WorkerPool(self.workers, self.python, self.disable)
        return self._pool

    def _warn_once(self, report: IsolationReport) -> None:
        if report.warnings and not self._warned:
            self._warned = True
            warnings.warn(
                "sandbox isolation is reduced: " + "; ".join(report.warnings), IsolationWarning, stacklevel=3
            )


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
