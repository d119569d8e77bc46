"""A small pool of math-verify worker processes that answers within a deadline, from any thread.

Why processes: a symbolic check can run for minutes (``9^{9^{9^{9}}}``) inside C code that no Python
signal interrupts, and math-verify's own timeouts use ``signal.alarm``, which raises outside the main
thread (a gRPC handler, a thread pool). A worker that misses its deadline is killed and replaced, which
bounds the time of every check whatever thread asks.

Why plain subprocesses rather than ``multiprocessing``: a worker is ``python -c <source>`` that talks
JSON lines over pipes, so nothing is forked from a process that may hold threads and locks, and nothing
re-imports the caller's ``__main__`` (an unguarded training script would otherwise crash on start).
Workers start lazily, on the first check that needs one; each imports math-verify once (about a second)
and then serves many checks.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

_WORKER_SOURCE = Path(__file__).with_name("_verify_worker.py")
_log = logging.getLogger(__name__)

#: Seconds a new worker may take to import math-verify and report ready.
DEFAULT_STARTUP_TIMEOUT = 60.0

#: Address-space cap of each worker, in MiB: a runaway expression fails instead of eating the machine.
DEFAULT_MEMORY_LIMIT_MIB = 4096


@dataclass(frozen=True)
class WorkerVerdict:
    """What a worker said about one comparison.

    Attributes:
        equal: True when math-verify found the answers equal (False on timeout or error).
        timed_out: True when the deadline passed first; the worker was killed.
        error: a short description when the check failed (worker could not start or died, or
            math-verify raised); None otherwise.
    """

    equal: bool
    timed_out: bool = False
    error: str | None = None


class _WorkerGone(Exception):
    """The worker's output ended: it crashed or was killed."""


class _Worker:
    """One worker process with a reader thread that queues its reply lines."""

    def __init__(self, memory_limit_mib: int) -> None:
        env = dict(os.environ)
        # The worker must find math-verify exactly where this process finds it.
        env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_SOURCE.read_text(encoding="utf-8"), str(memory_limit_mib)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="math-verify-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # This thread owns stdout: it reads until the process ends (or is killed), then closes it.
        stdout = self.process.stdout
        assert stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for line in stdout:
                self._lines.put(line)
        self._lines.put(None)
        with contextlib.suppress(OSError):
            stdout.close()

    def wait_ready(self, timeout: float) -> None:
        try:
            reply = self._next(timeout)
        except _WorkerGone:
            reply = None
        if reply is None or not reply.get("ready"):
            raise _WorkerGone("the math-verify worker did not start (is math-verify installed?)")

    def ask(self, request: dict[str, str], timeout: float) -> dict[str, object] | None:
        """The reply to ``request``, or None when ``timeout`` seconds pass first."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise _WorkerGone("the math-verify worker exited") from exc
        return self._next(timeout)

    def _next(self, timeout: float) -> dict[str, object] | None:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            raise _WorkerGone("the math-verify worker exited")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _WorkerGone(f"the math-verify worker wrote {line[:80]!r}") from exc
        if not isinstance(reply, dict):
            raise _WorkerGone(f"the math-verify worker wrote {line[:80]!r}")
        return reply

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # a SIGKILLed process ends at once
            self.process.wait(timeout=5)
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()


class VerifierPool:
    """Up to ``max_workers`` math-verify processes, started on demand and shared by all threads.

    :meth:`compare` takes an idle worker (starting one if the pool is below ``max_workers``, else
    waiting for one), sends the comparison and waits at most ``timeout`` seconds for the answer. The
    deadline counts from the moment a ready worker has the request: the one-off start of a worker
    (bounded by ``startup_timeout``) and the wait for a free worker are not charged to the answer.

    Args:
        max_workers: most worker processes alive at once.
        startup_timeout: seconds a new worker may take to import math-verify.
        memory_limit_mib: address-space cap per worker (0 for none; Unix only).
    """

    def __init__(
        self,
        max_workers: int = 2,
        *,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        memory_limit_mib: int = DEFAULT_MEMORY_LIMIT_MIB,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.startup_timeout = startup_timeout
        self.memory_limit_mib = memory_limit_mib
        self.pid = os.getpid()
        self._idle: list[_Worker] = []
        self._alive = 0
        self._closed = False
        self._warned = False
        self._cond = threading.Condition()

    def compare(self, gold: str, pred: str, timeout: float) -> WorkerVerdict:
        """Whether math-verify finds ``pred`` equal to ``gold``, decided within ``timeout`` seconds.

        Never raises for a bad expression: a timeout gives ``timed_out=True`` and a failure gives
        ``error``, both with ``equal=False``.
        """
        try:
            worker = self._acquire()
        except _WorkerGone as exc:
            return WorkerVerdict(False, error=str(exc))
        healthy = False
        try:
            reply = worker.ask({"gold": gold, "pred": pred}, timeout)
            if reply is None:
                return WorkerVerdict(False, timed_out=True)
            healthy = True
            error = reply.get("error")
            return WorkerVerdict(bool(reply.get("equal")), error=None if error is None else str(error))
        except _WorkerGone as exc:
            return WorkerVerdict(False, error=str(exc))
        finally:
            self._release(worker, healthy)

    def close(self) -> None:
        """Stop the idle workers; busy ones stop when their check ends."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._alive -= len(idle)
            self._cond.notify_all()
        for worker in idle:
            worker.kill()

    @property
    def alive(self) -> int:
        """Worker processes alive now (idle or busy)."""
        with self._cond:
            return self._alive

    def _acquire(self) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise _WorkerGone("the verifier pool is closed")
                if self._idle:
                    return self._idle.pop()
                if self._alive < self.max_workers:
                    self._alive += 1
                    break
                self._cond.wait()
        try:
            worker = _Worker(self.memory_limit_mib)
        except OSError as exc:
            self._forget()
            raise _WorkerGone(f"could not start a math-verify worker: {exc}") from exc
        try:
            worker.wait_ready(self.startup_timeout)
        except _WorkerGone as exc:
            worker.kill()
            self._forget()
            # Every symbolic check now scores "not equal": say so once, loudly, rather than only in info.
            if not self._warned:
                self._warned = True
                _log.warning("%s; symbolic answer checks count as wrong until a worker starts", exc)
            raise
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._cond:
            keep = healthy and not self._closed
            if keep:
                self._idle.append(worker)
            else:
                self._alive -= 1
            self._cond.notify()
        if not keep:
            worker.kill()  # a worker past its deadline may still be computing: stop it for good

    def _forget(self) -> None:
        with self._cond:
            self._alive -= 1
            self._cond.notify()


_default_pool: VerifierPool | None = None
_default_lock = threading.Lock()


def default_pool() -> VerifierPool:
    """The process-wide pool (two workers at most), created on first use.

    A forked child gets a fresh pool: the parent's workers answer only to the parent.
    """
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool.pid != os.getpid():
            _default_pool = VerifierPool(max_workers=min(2, os.cpu_count() or 1))
        return _default_pool


def configure_default_pool(
    max_workers: int, *, memory_limit_mib: int = DEFAULT_MEMORY_LIMIT_MIB
) -> VerifierPool:
    """Replace the process-wide pool, e.g. with more workers for a server that checks many symbolic
    answers at once. The old pool's idle workers stop; its busy ones finish their check first."""
    global _default_pool
    pool = VerifierPool(max_workers=max_workers, memory_limit_mib=memory_limit_mib)
    with _default_lock:
        old, _default_pool = _default_pool, pool
    if old is not None and old.pid == os.getpid():
        old.close()
    return pool


def _forget_pool_after_fork() -> None:
    # The child must not share the parent's workers, nor a lock another thread held at fork time.
    global _default_pool, _default_lock
    _default_pool = None
    _default_lock = threading.Lock()


def _close_default_pool() -> None:
    pool = _default_pool
    if pool is not None and pool.pid == os.getpid():
        pool.close()


atexit.register(_close_default_pool)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)
