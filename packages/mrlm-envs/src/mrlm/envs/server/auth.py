"""The shared-token check: every call must carry ``authorization: Bearer <token>``.

The comparison is constant-time (``hmac.compare_digest``) so that response times do not leak how much
of a guess was right. The standard health service is exempt, so that load balancers and orchestrators
can probe the server without the secret; reflection is not (it describes the service).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from typing import Any

import grpc

__all__ = ["HEALTH_METHODS", "TokenInterceptor"]

HEALTH_METHODS = frozenset(
    {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch", "/grpc.health.v1.Health/List"}
)

_DENIED = "missing or wrong token: send the metadata 'authorization: Bearer <token>' (MRLM_ENVS_TOKEN)"


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses calls without the right token with UNAUTHENTICATED.

    Args:
        token: the shared secret.
        exempt: full method names served without a token.
    """

    def __init__(self, token: str, exempt: Iterable[str] = HEALTH_METHODS) -> None:
        if not token:
            raise ValueError("the token must not be empty")
        self._expected = f"Bearer {token}".encode()
        self._exempt = frozenset(exempt)

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        if details.method in self._exempt or self._authorised(details.invocation_metadata):
            return continuation(details)
        return _refusal(continuation(details))

    def _authorised(self, metadata: Iterable[Any] | None) -> bool:
        supplied = b""
        for key, value in metadata or ():
            if key == "authorization":
                supplied = value.encode() if isinstance(value, str) else bytes(value)
                break
        return hmac.compare_digest(supplied, self._expected)


def _refusal(handler: Any) -> Any:
    """A handler of the same shape as ``handler`` that fails with UNAUTHENTICATED."""
    if handler is None:  # unknown method: let gRPC answer UNIMPLEMENTED
        return None

    def deny(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, _DENIED)

    shapes = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    build = shapes[(bool(handler.request_streaming), bool(handler.response_streaming))]
    return build(
        deny,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
