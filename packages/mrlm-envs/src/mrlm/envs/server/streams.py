"""A budget of long-lived calls, so that open streams never starve unary calls and health checks.

Each open stream (``StepStream``, reflection's ``ServerReflectionInfo``) holds one handler thread
for as long as its client keeps it open, idle or not. Without a cap, a few dozen idle streams hold
every thread and every other call, health checks included, waits forever. :class:`StreamBudget`
admits at most ``max_streams`` of them at once and refuses the next ones at once with
RESOURCE_EXHAUSTED; the server sizes its thread pool so that threads always remain for the rest.
The health service's ``Watch`` is left out: it keeps its own, smaller budget (see ``health``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc

__all__ = ["StreamBudget"]


class StreamBudget(grpc.ServerInterceptor):
    """Admits at most ``max_streams`` streaming calls at once.

    Args:
        max_streams: streams open at once.
        exempt: full method names left out of the budget.
    """

    def __init__(self, max_streams: int, exempt: Iterable[str] = ()) -> None:
        if max_streams < 1:
            raise ValueError(f"max_streams must be at least 1, got {max_streams}")
        self.max_streams = max_streams
        self._exempt = frozenset(exempt)
        self._open = 0
        self._lock = threading.Lock()

    @property
    def open(self) -> int:
        """Streams admitted and not yet ended."""
        return self._open

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or details.method in self._exempt or not handler.request_streaming:
            return handler
        build = (
            grpc.stream_stream_rpc_method_handler
            if handler.response_streaming
            else grpc.stream_unary_rpc_method_handler
        )
        behavior = handler.stream_stream if handler.response_streaming else handler.stream_unary
        wrapped = self._streaming(behavior) if handler.response_streaming else self._unary(behavior)
        return build(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _streaming(self, behavior: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def admitted(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            self._admit(context)
            try:
                yield from behavior(requests, context)
            finally:
                self._leave()

        return admitted

    def _unary(self, behavior: Callable[..., Any]) -> Callable[..., Any]:
        def admitted(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            self._admit(context)
            try:
                return behavior(requests, context)
            finally:
                self._leave()

        return admitted

    def _admit(self, context: grpc.ServicerContext) -> None:
        with self._lock:
            full = self._open >= self.max_streams
            if not full:
                self._open += 1
        if full:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the server holds its maximum of {self.max_streams} open streams (--max-streams); "
                "close idle streams, or use unary calls (Batch)",
            )

    def _leave(self) -> None:
        with self._lock:
            self._open -= 1
