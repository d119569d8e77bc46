"""The standard gRPC health service (``grpc.health.v1.Health``), built so that it always answers.

``Check`` and ``List`` read a dict and return: no lock, no waiting. ``Watch`` must not be a way to
take the server down: every watch would hold a handler thread for as long as the client keeps it
open, and many of them would leave no thread for anything else. So at most :data:`MAX_WATCHERS`
watches follow the status (they are sent each change, and end at shutdown); any further watch is
sent the current status and ended at once, and its client may watch again later. Followers wait on a
condition with a short timeout and notice cancelled calls by polling, so no gRPC callback ever
needs a lock they hold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

__all__ = ["MAX_WATCHERS", "HealthService"]

#: Watch calls that follow status changes at once; each holds a handler thread.
MAX_WATCHERS = 4

#: How often a follower looks whether its call is still wanted, in seconds.
_POLL_S = 0.25


class HealthService(health_pb2_grpc.HealthServicer):
    """Statuses per service name (``""`` is the whole server); method names are the rpc names.

    Args:
        services: the names to report, SERVING from the start.
    """

    def __init__(self, services: Iterable[str]) -> None:
        self._statuses: dict[str, int] = dict.fromkeys(services, health_pb2.HealthCheckResponse.SERVING)
        self._changed = threading.Condition()
        self._stopping = False
        self._watchers = 0

    def shut_down(self) -> None:
        """Report every service NOT_SERVING for good, and end the watches."""
        with self._changed:
            self._statuses = dict.fromkeys(self._statuses, health_pb2.HealthCheckResponse.NOT_SERVING)
            self._stopping = True
            self._changed.notify_all()

    def Check(  # noqa: N802
        self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        status = self._statuses.get(request.service)
        if status is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {request.service!r}")
        return health_pb2.HealthCheckResponse(status=status)

    def List(  # noqa: N802
        self, request: health_pb2.HealthListRequest, context: grpc.ServicerContext
    ) -> health_pb2.HealthListResponse:
        statuses = self._statuses
        return health_pb2.HealthListResponse(
            statuses={
                name: health_pb2.HealthCheckResponse(status=status) for name, status in statuses.items()
            }
        )

    def Watch(  # noqa: N802
        self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext
    ) -> Iterator[health_pb2.HealthCheckResponse]:
        with self._changed:
            follow = self._watchers < MAX_WATCHERS and not self._stopping
            if follow:
                self._watchers += 1
        try:  # from the first yield on: gRPC may close this generator at any of them
            status = self._status_of(request.service)
            yield health_pb2.HealthCheckResponse(status=status)
            if follow:
                yield from self._follow(request.service, status, context)
        finally:
            if follow:
                with self._changed:
                    self._watchers -= 1

    def _follow(
        self, service: str, sent: int, context: grpc.ServicerContext
    ) -> Iterator[health_pb2.HealthCheckResponse]:
        while context.is_active():
            with self._changed:
                if not self._stopping:  # the status only changes at shutdown, which notifies
                    self._changed.wait(timeout=_POLL_S)
                stopping = self._stopping
            status = self._status_of(service)
            if status != sent:
                sent = status
                yield health_pb2.HealthCheckResponse(status=status)
            if stopping:
                return

    def _status_of(self, service: str) -> int:
        return self._statuses.get(service, health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)
