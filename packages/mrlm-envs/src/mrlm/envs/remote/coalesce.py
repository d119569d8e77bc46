"""Resets and steps of many threads on one connection, sent together as ``Batch`` calls.

Every rpc costs a fixed amount of CPU on both ends, whatever it carries. When many threads step their
own sessions over a shared ``Connection(..., coalesce=True)`` (a trainer stepping a
batch of episodes, say), a :class:`Coalescer` lets the calls that arrive while a batch is in flight
ride on the next batch together.

No thread is added: the first caller sends a batch holding its own call and every call queued with it
(a "leader"); callers arriving meanwhile queue up and sleep. When the leader's reply comes back, it
hands every caller its result and wakes the first queued caller to lead the next batch. A lone caller
therefore sends a batch of one straight away, at the cost of a unary call.

A batch returns when its slowest call does: coalescing suits envs whose calls take similar times
(math, text games); with calls of very different lengths (code execution), unary calls let the fast
ones return first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mrlm.envs.remote.errors import RemoteEnvError, from_batch_error
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["Coalescer"]


class _Call:
    """One caller's reset or step, waiting for its share of a batch."""

    __slots__ = ("error", "item", "leads", "method", "state", "woken")

    def __init__(self, item: pb.BatchItem, method: str) -> None:
        self.item = item
        self.method = method
        self.state: pb.EnvState | None = None
        self.error: RemoteEnvError | None = None
        self.leads = False
        self.woken = (
            threading.Lock()
        )  # released when the result is in, or when it is this call's turn to lead
        self.woken.acquire()

    def outcome(self) -> pb.EnvState:
        if self.error is not None:
            raise self.error
        assert self.state is not None
        return self.state


class Coalescer:
    """Sends the resets and steps of concurrent callers together.

    Args:
        send: runs one ``Batch`` call (raising :class:`RemoteEnvError` when it fails).
        address: the server, for error messages.
        max_items: most items per batch; callers beyond it wait for the next one.
    """

    def __init__(
        self, send: Callable[[pb.BatchRequest], pb.BatchResponse], address: str, max_items: int = 256
    ) -> None:
        self._send_batch = send
        self._address = address
        self._max_items = max_items
        self._lock = threading.Lock()
        self._queue: list[_Call] = []
        self._sending = False

    def call(self, item: pb.BatchItem, method: str) -> pb.EnvState:
        """Run ``item`` (``method`` is ``"Reset"`` or ``"Step"``, for errors) in the next batch."""
        me = _Call(item, method)
        with self._lock:
            self._queue.append(me)
            leads = not self._sending
            self._sending = True
        if not leads:
            me.woken.acquire()
            if not me.leads:
                return me.outcome()
        self._lead(me)
        return me.outcome()

    def _lead(self, me: _Call) -> None:
        """Send the queued calls (``me`` first among them), deliver the results, pass the lead on."""
        with self._lock:
            batch = self._queue[: self._max_items]
            del self._queue[: self._max_items]
        try:
            self._send(batch)
        finally:
            with self._lock:
                successor = self._queue[0] if self._queue else None
                if successor is None:
                    self._sending = False
                else:
                    successor.leads = True
            for call in batch:
                if call is not me:
                    call.woken.release()
            if successor is not None:
                successor.woken.release()

    def _send(self, batch: list[_Call]) -> None:
        address = self._address
        try:
            reply = self._send_batch(pb.BatchRequest(items=[call.item for call in batch]))
        except RemoteEnvError as failure:
            for call in batch:  # a fresh exception per caller: each raises it in its own thread
                call.error = type(failure)(
                    str(failure),
                    address=address,
                    call=call.method,
                    code=failure.code,
                    details=failure.details,
                )
            return
        if len(reply.results) != len(batch):
            for call in batch:
                call.error = RemoteEnvError(
                    f"Batch on {address} answered {len(reply.results)} results for {len(batch)} items",
                    address=address,
                    call=call.method,
                )
            return
        for call, result in zip(batch, reply.results, strict=True):
            if result.HasField("error"):
                call.error = from_batch_error(result.error, address=address, call=call.method)
            else:
                call.state = result.state
