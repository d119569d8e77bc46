"""Env calls on worker threads, so that the gRPC handler can answer when one runs past its deadline.

A Python thread cannot be stopped, so a call that hangs cannot be cancelled; what the server can do is
stop waiting for it. The handler thread submits a :class:`Chain` (one or more calls, run in order on
one worker) and waits with a deadline per call. When a call runs past its deadline the chain is
abandoned: the handler reports DEADLINE_EXCEEDED for that call and gives up on the calls after it, a
new worker replaces the stuck one, and whatever the stuck call returns later is dropped (or handed to
``on_abandon``, so that an env built too late can still be closed). When the server stops, every
handler still waiting gives up the same way (:meth:`Runner.release_waiters`). Workers are daemon
threads: a call stuck forever does not keep the process alive at exit, and handler threads (which
the process does wait for) never wait for a call longer than the server's grace period.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["Abandoned", "CallTimedOut", "Chain", "Runner", "Stopped"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")


class CallTimedOut(Exception):
    """The outcome of a call that ran past its deadline (it may still be running)."""


class Abandoned(Exception):
    """The outcome of a call that never ran because an earlier call of its chain timed out."""


class Stopped(Exception):
    """The outcome of a call given up on because the server is stopping (it may still be running)."""


#: Longest a waiting handler sleeps before it looks again at its deadline and at the server stopping.
_SLICE_S = 0.25
#: ... and while the chain still waits for a worker (the deadline counts from the start of a call).
_QUEUED_SLICE_S = 0.05


class Chain(Generic[_T]):
    """Calls run one after the other on one worker; one outcome (a value or an exception) per call."""

    def __init__(
        self,
        calls: Sequence[Callable[[], _T]],
        on_abandon: Callable[[_T], None] | None,
        released: threading.Event | None = None,
    ) -> None:
        self._calls = list(calls)
        self._on_abandon = on_abandon
        self._released = released if released is not None else threading.Event()
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

    def wait(
        self, timeout_s: float | None, until: float | None = None
    ) -> tuple[list[_T | BaseException], bool]:
        """Wait for the outcomes; each call may run ``timeout_s`` seconds (None: no limit).

        Returns the outcomes and whether the chain timed out: the call that ran too long (or was
        running, or queued, when ``until``, a ``time.monotonic()`` instant, passed) then has a
        :class:`CallTimedOut` outcome and the calls after it :class:`Abandoned`. When the runner
        releases its waiters (the server stops), the calls not finished get :class:`Stopped`
        outcomes and the chain does not count as timed out.
        """
        while True:
            with self._lock:
                if self._done:
                    return self._outcomes, False
                index, started_at = self._index, self._started_at
            if self._released.is_set():
                self._give_up(index, Stopped("the server is stopping"), every=True)
                return self._outcomes, False
            now = time.monotonic()
            if index < 0:
                remaining = _QUEUED_SLICE_S
            elif timeout_s is None:
                remaining = _SLICE_S
            else:
                remaining = started_at + timeout_s - now
            if until is not None:
                remaining = min(remaining, until - now)
            if remaining > 0:
                if self._finished.acquire(timeout=min(remaining, _SLICE_S)):
                    return self._outcomes, False
                continue
            limit = f"{timeout_s:g} s" if timeout_s is not None else "the time left"
            if not self._give_up(index, CallTimedOut(f"the call took longer than {limit}")):
                continue  # finished, or moved on to the next call, just in time
            return self._outcomes, True

    def _give_up(self, index: int, outcome: BaseException, every: bool = False) -> bool:
        """Abandon the chain at call ``index`` (-1: not started) unless it moved on; True if abandoned.

        ``outcome`` goes to the call running (and, with ``every``, to each call after it).
        """
        with self._lock:
            if self._done or self._index != index:
                return False
            self._abandoned = True
            if index >= 0:
                self._outcomes[index] = outcome
            if every:
                for position in range(max(index, 0), len(self._calls)):
                    self._outcomes[position] = outcome
        return True


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
        self._released = threading.Event()  # set when the server stops: waiting handlers give up
        for _ in range(workers):
            self._spawn()

    def submit(
        self, calls: Sequence[Callable[[], _T]], on_abandon: Callable[[_T], None] | None = None
    ) -> Chain[_T]:
        """Queue ``calls`` as one chain and return it; wait for it with :meth:`Chain.wait`."""
        chain = Chain(calls, on_abandon, self._released)
        self._queue.put(chain)
        return chain

    def run(
        self,
        timeout_s: float | None,
        calls: Sequence[Callable[[], _T]],
        on_abandon: Callable[[_T], None] | None = None,
    ) -> tuple[list[_T | BaseException], bool]:
        """Run ``calls`` on a worker, wait for them, and replace the worker if they timed out.

        Even without a deadline the calls run on a worker: the waiting thread must be free to give
        up when the server stops (:meth:`release_waiters`).
        """
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

    def release_waiters(self) -> None:
        """Make every wait for a chain return now, and every later one at once (the server stops).

        The calls still running go on in their daemon workers; what they return is dropped (or
        handed to ``on_abandon``). The handler threads, which a process waits for at exit, are free.
        """
        self._released.set()

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
