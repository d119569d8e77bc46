"""The exceptions a remote env raises: one type per cause, each naming the server and the call.

Every failure of a call to an env server is a :class:`RemoteEnvError`. Its subclasses say why, so that
a caller can react to the cause (reopen a session, wait for the server, fix a request) without reading
messages:

==============================  ===================  ===============================================
Exception                       gRPC status          What happened
==============================  ===================  ===============================================
:class:`ServerUnavailableError` UNAVAILABLE          the server cannot be reached, or the connection
                                                     broke (server down, restarting, network)
:class:`SessionLostError`       NOT_FOUND (session)  the server no longer knows the session: it
                                                     expired, was closed after a deadline, or the
                                                     server restarted; ``reset()`` opens a new one
:class:`RemoteDeadlineError`    DEADLINE_EXCEEDED    a call took longer than its deadline (the
                                                     server then closes the session)
:class:`RemoteAuthError`        UNAUTHENTICATED      missing or wrong token
:class:`ServerBusyError`        RESOURCE_EXHAUSTED   session limit reached, or a message too large
:class:`RemoteArgumentError`    INVALID_ARGUMENT     an action, option or keyword the env refuses
:class:`RemoteEpisodeError`     FAILED_PRECONDITION  step before reset, or after the episode ended
:class:`RemoteEnvFailure`       INTERNAL             the env raised an exception on the server
==============================  ===================  ===============================================

Opening a session also raises :class:`UnknownRemoteEnvError` (also an
:class:`~mrlm.envs.registry.UnknownEnvError`) for an id the server does not host, and
:class:`RemoteEnvArgumentError` (also an :class:`~mrlm.envs.registry.EnvArgumentError`) for keyword
arguments the env does not take, so code written against local ids catches the same errors.
"""

from __future__ import annotations

from typing import Any

import grpc

from mrlm.envs.registry import EnvArgumentError, UnknownEnvError
from mrlm.proto.v1 import env_pb2 as pb

__all__ = [
    "RemoteArgumentError",
    "RemoteAuthError",
    "RemoteDeadlineError",
    "RemoteEnvArgumentError",
    "RemoteEnvError",
    "RemoteEnvFailure",
    "RemoteEpisodeError",
    "ServerBusyError",
    "ServerUnavailableError",
    "SessionLostError",
    "UnknownRemoteEnvError",
    "from_batch_error",
    "from_rpc_error",
]


class RemoteEnvError(RuntimeError):
    """A call to an env server failed.

    Attributes:
        address: the server, as the client was given it.
        call: the rpc that failed (``"Step"``, ``"OpenSession"``...).
        code: the gRPC status code name (``"UNAVAILABLE"``...), or ``""`` when there is none.
        details: the server's (or gRPC's) description of the failure.
    """

    def __init__(self, message: str, *, address: str, call: str, code: str = "", details: str = "") -> None:
        super().__init__(message)
        self.address = address
        self.call = call
        self.code = code
        self.details = details

    def __str__(self) -> str:  # KeyError (a base of UnknownRemoteEnvError) would quote the message
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only attributes would otherwise be lost (or fail) when the error is pickled.
        return (_rebuild, (type(self), self.args[0], self.address, self.call, self.code, self.details))


class ServerUnavailableError(RemoteEnvError):
    """The server cannot be reached, or the connection to it broke during the call."""


class SessionLostError(RemoteEnvError):
    """The server does not know the session any more (expired, closed after a deadline, restarted)."""


class RemoteDeadlineError(RemoteEnvError):
    """The call took longer than its deadline; the server closes the session of a call it times out."""


class RemoteAuthError(RemoteEnvError):
    """The server refused the token (missing or wrong)."""


class ServerBusyError(RemoteEnvError):
    """The server refused for lack of room: its session limit, or a message over its size limit."""


class RemoteArgumentError(RemoteEnvError, ValueError):
    """The server refused a value: an action that does not fit the env, bad options, malformed JSON."""


class RemoteEnvArgumentError(RemoteArgumentError, EnvArgumentError):
    """Opening a session failed on the env's keyword arguments, or on a kind the env does not offer."""


class UnknownRemoteEnvError(RemoteEnvError, UnknownEnvError):
    """The server does not host the env id."""


class RemoteEpisodeError(RemoteEnvError):
    """A step the episode does not allow: before the first reset, or after the episode ended."""


class RemoteEnvFailure(RemoteEnvError):
    """The env raised an exception on the server; the message holds its type and text."""


_BY_CODE: dict[grpc.StatusCode, type[RemoteEnvError]] = {
    grpc.StatusCode.UNAVAILABLE: ServerUnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: RemoteDeadlineError,
    grpc.StatusCode.UNAUTHENTICATED: RemoteAuthError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ServerBusyError,
    grpc.StatusCode.INVALID_ARGUMENT: RemoteArgumentError,
    grpc.StatusCode.FAILED_PRECONDITION: RemoteEpisodeError,
    grpc.StatusCode.INTERNAL: RemoteEnvFailure,
}

_HINTS: dict[type[RemoteEnvError], str] = {
    ServerUnavailableError: "is the server running and reachable? (mrlm-envs serve)",
    SessionLostError: "the session expired, was closed after a deadline, or the server restarted; "
    "reset() opens a new session",
    RemoteDeadlineError: "the call ran past its deadline; the server closes such a session, reset() opens "
    "a new one",
    RemoteAuthError: "pass the server's token (token=... or the MRLM_ENVS_TOKEN environment variable)",
}


def from_rpc_error(
    error: grpc.RpcError | grpc.StatusCode, details: str, *, address: str, call: str
) -> RemoteEnvError:
    """The :class:`RemoteEnvError` for a failed call: its type from the status code and the call.

    ``error`` is the exception gRPC raised (``details`` is then ignored in favour of its own) or a bare
    status code (a failed item of a ``Batch`` reply, whose message is ``details``).
    """
    if isinstance(error, grpc.StatusCode):
        code = error
    else:
        code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
        details = (error.details() if callable(getattr(error, "details", None)) else None) or str(error)
    cls: type[RemoteEnvError]
    if code == grpc.StatusCode.NOT_FOUND:
        cls = UnknownRemoteEnvError if call in ("OpenSession", "ListEnvs") else SessionLostError
    elif code == grpc.StatusCode.INVALID_ARGUMENT and call == "OpenSession":
        cls = RemoteEnvArgumentError
    else:
        cls = _BY_CODE.get(code, RemoteEnvError)
    hint = _HINTS.get(cls)
    message = f"{call} on {address} failed ({code.name}): {details}" + (f" [{hint}]" if hint else "")
    return cls(message, address=address, call=call, code=code.name, details=details)


def from_batch_error(error: pb.Error, *, address: str, call: str) -> RemoteEnvError:
    """The :class:`RemoteEnvError` for a failed item of a ``Batch`` or ``StepStream`` reply."""
    code = _CODES.get(error.code, grpc.StatusCode.UNKNOWN)
    return from_rpc_error(code, error.message, address=address, call=call)


_CODES: dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}


def _rebuild(
    cls: type[RemoteEnvError], message: str, address: str, call: str, code: str, details: str
) -> RemoteEnvError:
    return cls(message, address=address, call=call, code=code, details=details)
