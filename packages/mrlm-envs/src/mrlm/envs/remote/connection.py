"""One gRPC channel to an env server: credentials, deadlines, bounded retries, clear errors.

Every rpc goes through :meth:`Connection.call`, which turns a failed call into the
:class:`~mrlm.envs.remote.errors.RemoteEnvError` subclass of its cause. Calls the caller marks
idempotent (listing envs, rendering, closing a session, opening one) are retried with exponential
backoff while the server is unavailable, a bounded number of times; resets and steps are never retried,
since the server may have applied them before the connection broke.

Defaults come from the environment, so that ``mrlm.envs.make("grpc://...")`` needs no extra argument:

- ``MRLM_ENVS_TOKEN``: the shared token, sent as ``authorization: Bearer <token>`` on every call;
- ``MRLM_ENVS_TLS_CA``: a PEM file of root certificates for ``grpcs://`` servers (the system roots
  otherwise).
"""

from __future__ import annotations

import math
import os
import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc

from mrlm.envs.remote.address import parse_address
from mrlm.envs.remote.coalesce import Coalescer
from mrlm.envs.remote.errors import RemoteEnvError, ServerUnavailableError, from_rpc_error
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc

__all__ = ["TLS_CA_ENV", "TOKEN_ENV", "BatchStream", "Connection", "connect"]

TOKEN_ENV = "MRLM_ENVS_TOKEN"
TLS_CA_ENV = "MRLM_ENVS_TLS_CA"

#: Default deadline of one call, in seconds: longer than the server's own per-call deadline
#: (60 s by default), so that a slow env is reported by the server, which also closes the session.
DEFAULT_TIMEOUT_S = 120.0

#: Default interval of the pings that check the server is still there while a call is in flight.
DEFAULT_KEEPALIVE_S = 10.0

#: Largest message the client accepts: observations of many sessions may share one Batch reply.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

#: The smallest ``max_message_bytes`` a connection takes: below it even the reply that opens a
#: session (its spaces and first observation) would be refused.
MIN_MESSAGE_BYTES = 4096


class Connection:
    """A channel to one server, shared by any number of sessions and threads.

    Each ``Connection`` has a TCP connection of its own. A server of several processes
    (``mrlm-envs serve --processes``) serves all the sessions of one ``Connection`` in one process;
    client envs given an address string each open their own, and so spread over the processes.

    Args:
        address: ``host:port``, ``grpc://host:port`` or ``grpcs://host:port`` (TLS).
        token: the server's shared token; ``MRLM_ENVS_TOKEN`` when None.
        tls: force TLS on or off; the scheme decides when None.
        root_certificates: PEM root certificates (bytes) or a path to them, for TLS; ``MRLM_ENVS_TLS_CA``
            or the system roots when None.
        tls_server_name: the name to check the server's certificate against, when it differs from the
            host dialled (e.g. a certificate for ``localhost`` served on ``127.0.0.1``).
        timeout_s: deadline of each call, in seconds (finite and above 0; a bad setting is refused here).
        retries: how many times an idempotent call is retried while the server is unavailable.
        backoff_s: first pause between retries; doubled each time, at most 2 s.
        max_message_bytes: largest reply accepted.
        coalesce: send the resets and steps that threads make at the same time on this connection
            together, as one ``Batch`` call (see ``mrlm.envs.remote.coalesce``): far fewer rpcs when many
            threads step their own sessions, the same results.
        keepalive_s: while a call is in flight, ping the server every ``keepalive_s`` seconds and
            fail the call as unavailable when a ping goes unanswered for as long: a server whose
            machine or network vanished without closing the connection is noticed in about twice
            this, not at the call's deadline. None: no pings. Servers of MRLM accept a ping a
            second; other gRPC servers may close a connection that pings often during a long call
            ("too many pings"): use None, or a longer interval, with those.
    """

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        tls: bool | None = None,
        root_certificates: bytes | str | Path | None = None,
        tls_server_name: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = 4,
        backoff_s: float = 0.1,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        coalesce: bool = False,
        keepalive_s: float | None = DEFAULT_KEEPALIVE_S,
    ) -> None:
        _check_settings(timeout_s, retries, backoff_s, max_message_bytes, keepalive_s)
        target, scheme_tls = parse_address(address)
        self.address = address
        self.target = target
        self.tls = scheme_tls if tls is None else tls
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        token = os.environ.get(TOKEN_ENV) if token is None else token
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", -1),
            # Reconnect quickly after a server restart (gRPC's default backoff starts at 1 s and grows to
            # 2 min, which would fail every call for that long).
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1000),
            # A connection of its own: gRPC otherwise shares one TCP connection between the channels
            # of a process that dial the same address with the same settings, and a server of several
            # processes (SO_REUSEPORT) spreads connections, not channels, over its processes.
            ("grpc.use_local_subchannel_pool", 1),
        ]
        if keepalive_s is not None:
            milliseconds = max(1, round(keepalive_s * 1000))
            options += [
                ("grpc.keepalive_time_ms", milliseconds),
                ("grpc.keepalive_timeout_ms", milliseconds),
                # Any ping's answer (gRPC's own flow-control pings too, which a keepalive ping joins
                # when one is in flight) is awaited this long, not gRPC's default minute.
                ("grpc.http2.ping_timeout_ms", milliseconds),
                ("grpc.keepalive_permit_without_calls", 0),  # an idle connection costs nothing
                ("grpc.http2.max_pings_without_data", 0),  # a long env call sends no data
            ]
        if self.tls:
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
            credentials = grpc.ssl_channel_credentials(root_certificates=_read_roots(root_certificates))
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._stub = env_pb2_grpc.EnvServiceStub(self._channel)
        self.closed = False
        self.coalescer = Coalescer(self.batch, self.address) if coalesce else None

    def call(
        self,
        method: str,
        request: Any,
        *,
        idempotent: bool,
        timeout_s: float | None = None,
        retries: int | None = None,
    ) -> Any:
        """Run the rpc ``method`` (``"Step"``, ...) and return its reply.

        ``timeout_s`` and ``retries`` override the connection's defaults for this call; only idempotent
        calls are retried.

        Raises:
            RemoteEnvError: the subclass of the failure's cause (see ``mrlm.envs.remote.errors``).
        """
        rpc = getattr(self._stub, method)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        attempts = 1 + ((self.retries if retries is None else retries) if idempotent else 0)
        pause = self.backoff_s
        for attempt in range(attempts):
            try:
                return rpc(request, timeout=timeout, metadata=self._metadata)
            except grpc.RpcError as error:
                unavailable = error.code() == grpc.StatusCode.UNAVAILABLE
                if not unavailable or attempt + 1 == attempts:
                    raise from_rpc_error(error, "", address=self.address, call=method) from None
            except ValueError as error:  # gRPC raises ValueError on a closed channel
                raise ServerUnavailableError(
                    f"{method} on {self.address} failed: {error}", address=self.address, call=method
                ) from None
            time.sleep(pause)
            pause = min(2 * pause, 2.0)
        raise AssertionError("unreachable")  # the loop returns or raises

    def list_envs(self, retries: int | None = None) -> list[pb.EnvInfo]:
        """Every env the server hosts (``ListEnvs``), ordered by id; ``retries`` overrides the default."""
        return list(self.call("ListEnvs", pb.ListEnvsRequest(), idempotent=True, retries=retries).envs)

    def batch(self, request: pb.BatchRequest) -> pb.BatchResponse:
        """Run a ``Batch`` (resets and steps are not retried)."""
        response: pb.BatchResponse = self.call("Batch", request, idempotent=False)
        return response

    def start_batch(self, request: pb.BatchRequest) -> Callable[[], pb.BatchResponse]:
        """Send a ``Batch`` without waiting; the function returned waits for the reply (and raises the
        :class:`RemoteEnvError` of a failure). For batches to several servers at once."""
        try:
            future = self._stub.Batch.future(request, timeout=self.timeout_s, metadata=self._metadata)
        except ValueError as error:  # a closed channel
            failure = ServerUnavailableError(
                f"Batch on {self.address} failed: {error}", address=self.address, call="Batch"
            )

            def fail() -> pb.BatchResponse:
                raise failure

            return fail

        def reply() -> pb.BatchResponse:
            try:
                response: pb.BatchResponse = future.result()
            except grpc.RpcError as error:
                raise from_rpc_error(error, "", address=self.address, call="Batch") from None
            return response

        return reply

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        """Block until the channel is connected; :class:`ServerUnavailableError` after ``timeout_s``."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            raise ServerUnavailableError(
                f"no server answered at {self.address} within {timeout_s} s",
                address=self.address,
                call="connect",
                code="UNAVAILABLE",
            ) from None

    def open_stream(self) -> BatchStream:
        """A :class:`BatchStream` over one ``StepStream`` call."""
        return BatchStream(self)

    def close(self) -> None:
        """Close the channel; calls in flight fail. Idempotent."""
        if not self.closed:
            self.closed = True
            self._channel.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Connection({self.address!r}, tls={self.tls})"


class BatchStream:
    """Batches sent over one long-lived ``StepStream`` call, one reply per request, in order.

    Saves the per-call set-up of unary ``Batch`` calls when a client steps the same sessions over and
    over. Not thread-safe: one sender at a time.
    """

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._requests: queue.SimpleQueue[pb.BatchRequest | None] = queue.SimpleQueue()
        self._responses: Iterator[pb.BatchResponse] = connection._stub.StepStream(
            iter(self._requests.get, None), metadata=connection._metadata
        )
        self.closed = False

    def send(self, request: pb.BatchRequest) -> pb.BatchResponse:
        """Send one batch and wait for its reply."""
        self.put(request)
        return self.take()

    def put(self, request: pb.BatchRequest) -> None:
        """Send one batch; :meth:`take` waits for its reply."""
        if self.closed:
            raise ServerUnavailableError(
                f"StepStream on {self._connection.address} is closed",
                address=self._connection.address,
                call="StepStream",
            )
        self._requests.put(request)

    def take(self) -> pb.BatchResponse:
        """The reply to the oldest batch sent and not yet answered."""
        try:
            return next(self._responses)
        except grpc.RpcError as error:
            self.closed = True
            raise from_rpc_error(error, "", address=self._connection.address, call="StepStream") from None
        except StopIteration:
            self.closed = True
            raise RemoteEnvError(
                f"StepStream on {self._connection.address} ended early",
                address=self._connection.address,
                call="StepStream",
            ) from None

    def close(self) -> None:
        """End the stream (the server then ends its side). Idempotent."""
        if not self.closed:
            self.closed = True
            self._requests.put(None)
        cancel = getattr(self._responses, "cancel", None)
        if callable(cancel):
            cancel()


def _check_settings(
    timeout_s: float, retries: int, backoff_s: float, max_message_bytes: int, keepalive_s: float | None
) -> None:
    """Raise ValueError naming a connection setting out of range. A nan, negative or infinite
    deadline made every call fail with DEADLINE_EXCEEDED, and negative retries none run at all."""
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s must be a finite number of seconds > 0, got {timeout_s}")
    if retries < 0:
        raise ValueError(f"retries must be at least 0, got {retries}")
    if not (math.isfinite(backoff_s) and backoff_s >= 0):
        raise ValueError(f"backoff_s must be a finite number of seconds >= 0, got {backoff_s}")
    if max_message_bytes < MIN_MESSAGE_BYTES:
        raise ValueError(f"max_message_bytes must be at least {MIN_MESSAGE_BYTES}, got {max_message_bytes}")
    if keepalive_s is not None and not (math.isfinite(keepalive_s) and keepalive_s > 0):
        raise ValueError(f"keepalive_s must be a finite number of seconds > 0, or None, got {keepalive_s}")


def connect(address: str | Connection) -> tuple[Connection, bool]:
    """The connection to use for ``address`` and whether the caller owns it (and must close it).

    A :class:`Connection` is shared as it is; a string opens a new connection with the defaults.
    """
    if isinstance(address, Connection):
        return address, False
    return Connection(address), True


def _read_roots(roots: bytes | str | Path | None) -> bytes | None:
    if roots is None:
        path = os.environ.get(TLS_CA_ENV)
        return Path(path).read_bytes() if path else None
    if isinstance(roots, bytes):
        return roots
    return Path(roots).read_bytes()
