"""The one exception of the server's logic: a request refused with a gRPC status code."""

from __future__ import annotations

import grpc

__all__ = ["RequestError"]


class RequestError(Exception):
    """A request the server refuses; the servicer answers it with ``code`` and ``message``.

    Attributes:
        code: the gRPC status code (NOT_FOUND, INVALID_ARGUMENT, ...).
        message: a readable description, sent to the client as the status details.
    """

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"
