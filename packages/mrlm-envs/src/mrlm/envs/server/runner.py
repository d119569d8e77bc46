"""Env calls on worker threads, so that the gRPC handler can answer when one runs past its deadline.

A Python thread cannot be stopped, so a call that hangs cannot be cancelled; what the server can do is
stop waiting for it. The handler thread submits a :class:`Chain` (one or more calls, run in order on
one worker) and waits with a deadline per call. When a call runs past its deadline the chain is
abandoned: the handler reports DEADLINE_EXCEEDED for that call and gives up on the calls after it, a
new worker replaces the stuck one, and whatever the stuck call returns later is dropped (or handed to
``on_abandon``, so that an env built too late can still be closed). Workers are daemon threads: a
call stuck forever does not keep the process alive at exit.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Abandoned", "CallTimedOut", "Chain", "Runner"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")


class CallTimedOut(Exception):
    """The outcome of a call that ran past its deadline (it may still be running)."""


class Abandoned(Exception):
    """The outcome of a call that never ran because an earlier call of its chain timed out."""


class Chain(Generic[_T]):
    """Calls run one after the other on one worker; one outcome (a value or an exception) per call."""

    def __init__(self, calls: Sequence[Callable[[], _T]], on_abandon: Callable[[_T], None] | None) -> None:
        self._calls = list(calls)
        self._on_abandon = on_abandon
        self._outcomes: list[_T | BaseException] = [Abandoned() for _ in self._calls]
        self._lock = threading.Lock()
        # Released once every call has run: a bare lock is the cheapest thing to block on, and the
        # hand-off to a worker and back is on the path of every env call.
        self._finished = threading.Lock()
        self._finished.acquire()
        self._done = False
        self._index = -1  # the call running now; -1 until a worker starts the chain
        self._started_at = 0.0
        self._abandoned = False

    def run(self) -> None:
        """Run the calls (on a worker thread)."""
        for index, call in enumerate(self._calls):
            with self._lock:
                if self._abandoned:
                    return
                self._index, self._started_at = index, time.monotonic()
            outcome: _T | BaseException
            try:
                outcome = call()
            except BaseException as error:  # reported to the waiting handler, never raised here
                outcome = error
            with self._lock:
                late = self._abandoned
                if not late:
                    self._outcomes[index] = outcome
            if late:
                if self._on_abandon is not None and not isinstance(outcome, BaseException):
                    self._on_abandon(outcome)
                return
        with self._lock:
            self._done = True
        self._finished.release()

    def wait(self, timeout_s: float | None) -> tuple[list[_T | BaseException], bool]:
        """Wait for the outcomes; each call may run ``timeout_s`` seconds (None: no limit).

        Returns the outcomes and whether the chain timed out: the call that ran too long then has a
        :class:`CallTimedOut` outcome and the calls after it :class:`Abandoned`.
        """
        if timeout_s is None:
            self._finished.acquire()
            return self._outcomes, False
        while True:
            with self._lock:
                if self._done:
                    return self._outcomes, False
                index, started_at = self._index, self._started_at
            # Still queued: the deadline counts from the start of each call, so just look again soon.
            remaining = min(timeout_s, 0.05) if index < 0 else started_at + timeout_s - time.monotonic()
            if remaining > 0:
                if self._finished.acquire(timeout=remaining):
                    return self._outcomes, False
                continue
            with self._lock:
                if self._done or self._index != index:
                    continue  # finished, or moved on to the next call, just in time
                self._abandoned = True
                self._outcomes[index] = CallTimedOut(f"the call took longer than {timeout_s:g} s")
            return self._outcomes, True


class Runner:
    """A fixed number of daemon worker threads running :class:`Chain` s.

    Args:
        workers: threads running env calls at once (a stuck call's thread is replaced).
        name: prefix of the thread names.
    """

    def __init__(self, workers: int, name: str = "mrlm-env") -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._queue: queue.SimpleQueue[Chain[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._name = name
        self._spawned = 0
        self._surplus = 0  # threads to retire: stuck threads that were replaced and came back
        self._stopped = False
        for _ in range(workers):
            self._spawn()

    def submit(
        self, calls: Sequence[Callable[[], _T]], on_abandon: Callable[[_T], None] | None = None
    ) -> Chain[_T]:
        """Queue ``calls`` as one chain and return it; wait for it with :meth:`Chain.wait`."""
        chain = Chain(calls, on_abandon)
        self._queue.put(chain)
        return chain

    def run(
        self,
        timeout_s: float | None,
        calls: Sequence[Callable[[], _T]],
        on_abandon: Callable[[_T], None] | None = None,
    ) -> tuple[list[_T | BaseException], bool]:
        """Run ``calls`` on a worker, wait for them, and replace the worker if they timed out.

        Without a deadline there is nothing to watch: the calls run on the calling thread.
        """
        if timeout_s is None:
            chain = Chain(calls, on_abandon)
            chain.run()
            return chain.wait(None)
        outcomes, timed_out = self.submit(calls, on_abandon).wait(timeout_s)
        if timed_out:
            self.replace_stuck_worker()
        return outcomes, timed_out

    def replace_stuck_worker(self) -> None:
        """Start a thread in place of one stuck in an abandoned call; it retires when the call returns."""
        with self._lock:
            if self._stopped:
                return
            self._surplus += 1
        self._spawn()

    def shutdown(self) -> None:
        """Let idle workers exit; a worker stuck in a call exits when (if) the call returns."""
        with self._lock:
            self._stopped = True
            count = self._spawned
        for _ in range(count):
            self._queue.put(None)

    def _spawn(self) -> None:
        with self._lock:
            self._spawned += 1
            number = self._spawned
        threading.Thread(target=self._work, name=f"{self._name}-{number}", daemon=True).start()

    def _work(self) -> None:
        while True:
            chain = self._queue.get()
            if chain is None:
                return
            try:
                chain.run()
            except BaseException:  # on_abandon failed: log, keep the worker
                _log.exception("cleaning up after an abandoned env call failed")
            with self._lock:
                if self._surplus > 0:
                    self._surplus -= 1
                    return
