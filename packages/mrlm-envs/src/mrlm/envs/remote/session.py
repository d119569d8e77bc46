"""One session on an env server: open, reset, step, render, close; the clients are thin over it.

A session whose server-side state is gone (it expired, a call ran past its deadline, the server
restarted) is marked :attr:`RemoteSession.lost` when a call says so; the next :meth:`RemoteSession.reset`
then opens a new session with the same keyword arguments, since a reset throws the old episode away
anyway. Steps are never replayed.

A session opened on a :class:`~mrlm.envs.remote.servers.ServerList` takes the server whose turn it is
(the next that answers) and a connection of its own to it; if that server becomes unreachable the
session counts as lost too, and the next reset opens it again on a server that answers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mrlm.envs.core.reset_options import reset_options
from mrlm.envs.registry import EnvKind
from mrlm.envs.remote.connection import Connection, connect
from mrlm.envs.remote.convert import KIND_TO_PROTO
from mrlm.envs.remote.errors import (
    RemoteDeadlineError,
    RemoteEnvError,
    ServerUnavailableError,
    SessionLostError,
)
from mrlm.envs.remote.servers import ServerList, server_list
from mrlm.envs.remote.spec import RemoteSpec
from mrlm.proto.json_codec import encode_json
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteSession"]

_log = logging.getLogger(__name__)

#: Closing never waits long on a dead server: close() must return promptly and must not raise.
_CLOSE_TIMEOUT_S = 5.0
_CLOSE_RETRIES = 2


class RemoteSession:
    """A session that owns one env instance on the server.

    Args:
        connection: the channel to the server, or the servers to choose from (the session then opens
            a connection of its own to the one whose turn it is).
        env_id: the id on the server.
        kind: ``"gymnasium"``, ``"aec"`` or ``"parallel"``; the env's native kind when None.
        kwargs: the env's keyword arguments; they must be JSON-encodable.
        owns_connection: close ``connection`` when the session closes.

    Raises:
        ValueError: ``kwargs`` cannot be encoded as JSON.
        RemoteEnvError: opening failed (unknown id, bad kwargs, no room, server unreachable...).
    """

    connection: Connection

    def __init__(
        self,
        connection: Connection | ServerList,
        env_id: str,
        kind: EnvKind | None,
        kwargs: Mapping[str, Any],
        *,
        owns_connection: bool = False,
    ) -> None:
        self.servers: ServerList | None = None
        if isinstance(connection, ServerList):
            self.servers = connection
            owns_connection = True
        else:
            self.connection = connection
        self.owns_connection = owns_connection
        self.closed = False
        try:
            kwargs_json = encode_json(dict(kwargs))
        except ValueError as error:
            self.close()
            raise ValueError(
                f"the keyword arguments of {env_id!r} travel to the server as JSON: {error}"
            ) from None
        self.env_id = env_id
        self._open_request = pb.OpenSessionRequest(
            env_id=env_id,
            kind=KIND_TO_PROTO[kind] if kind else pb.ENV_KIND_UNSPECIFIED,
            kwargs_json=kwargs_json,
        )
        self.session_id = ""
        self.lost = False
        try:
            reply = self._open()
        except BaseException:
            self.close()
            raise
        self.spec = RemoteSpec.from_proto(reply.spec)

    @classmethod
    def for_client(
        cls, address: str | Connection | ServerList, env_id: str, kind: EnvKind, kwargs: Mapping[str, Any]
    ) -> RemoteSession:
        """The session of a client env: a new connection unless one is given (to the server whose turn
        it is, for a list of servers); human rendering is local.

        With ``render_mode="human"`` the server renders as ``"ansi"`` and :meth:`render_as` prints the
        text here, where the person is.
        """
        server_kwargs = dict(kwargs)
        if server_kwargs.get("render_mode") == "human":
            server_kwargs["render_mode"] = "ansi"
        servers = None if isinstance(address, Connection) else server_list(address)
        if servers is not None:
            return cls(servers, env_id, kind, server_kwargs)
        assert not isinstance(address, ServerList)
        connection, owned = connect(address)
        return cls(connection, env_id, kind, server_kwargs, owns_connection=owned)

    def reset(self, seed: int | None, options: Mapping[str, Any] | None) -> pb.EnvState:
        """Reset the env (opening a new session first if this one was lost)."""
        if self.lost:
            self.reopen()
        request = pb.ResetRequest(session_id=self.live_id(), options_json=options_json(options))
        if seed is not None:
            request.seed = wire_seed(seed)
        if self.connection.coalescer is not None:
            return self._batched(pb.BatchItem(reset=request), "Reset")
        reply: pb.ResetResponse = self._call("Reset", request)
        return reply.state

    def step(self, request: pb.StepRequest) -> pb.EnvState:
        """Send a step; ``request.session_id`` is filled in here."""
        request.session_id = self.live_id()
        if self.connection.coalescer is not None:
            return self._batched(pb.BatchItem(step=request), "Step")
        reply: pb.StepResponse = self._call("Step", request)
        return reply.state

    def render(self) -> str:
        """The env's text rendering."""
        request = pb.RenderRequest(session_id=self.live_id())
        reply: pb.RenderResponse = self._call("Render", request, idempotent=True)
        return reply.text

    def render_as(self, render_mode: str | None) -> str | None:
        """What a client's ``render()`` returns: None without a mode, the text for ``"ansi"``; printed
        (and None) for ``"human"``."""
        if render_mode is None:
            return None
        text = self.render()
        if render_mode == "human":
            print(text)
            return None
        return text

    def reopen(self) -> None:
        """Release the current session (if the server still has it) and open a new one."""
        self._release()
        self._open()

    def close(self) -> None:
        """Release the session on the server (and close an owned connection). Never raises; idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self._release()
        finally:
            if self.owns_connection and hasattr(self, "connection"):
                self.connection.close()

    def __del__(self) -> None:
        # A client dropped without close(): release the server's env now rather than at idle expiry.
        try:
            if not self.closed and hasattr(self, "connection") and not self.connection.closed:
                self.close()
        except BaseException:  # interpreter shutdown may have torn gRPC down already
            pass

    # ----------------------------------------------------------------------------------------------

    def _open(self) -> pb.OpenSessionResponse:
        if self.servers is None:
            return self._open_on(self.connection)
        # On the next server that answers, over a connection of the session's own (all its calls go
        # there); the previous one, to a server that may be gone, is dropped.
        if hasattr(self, "connection"):
            self.connection.close()
        self.connection, reply = self.servers.first_answer(lambda c: self._open_on(c, retries=0))
        return reply

    def _open_on(self, connection: Connection, retries: int | None = None) -> pb.OpenSessionResponse:
        # Retried while the server is unavailable: at worst a retry opens a second session, which the
        # server reclaims at idle expiry.
        reply: pb.OpenSessionResponse = connection.call(
            "OpenSession", self._open_request, idempotent=True, retries=retries
        )
        self.session_id = reply.session_id
        self.lost = False
        return reply

    def _release(self) -> None:
        # Even a lost session is closed: after a client-side deadline the server still holds it (a
        # session the server already dropped just answers NOT_FOUND).
        if not getattr(self, "session_id", "") or not hasattr(self, "connection"):
            return
        request = pb.CloseSessionRequest(session_id=self.session_id)
        self.session_id = ""
        try:
            self.connection.call(
                "CloseSession", request, idempotent=True, timeout_s=_CLOSE_TIMEOUT_S, retries=_CLOSE_RETRIES
            )
        except RemoteEnvError as error:  # a dead server has no session left to release
            _log.debug("closing session %s: %s", request.session_id, error)

    def live_id(self) -> str:
        """The id to send a call under; raises :class:`RemoteEnvError` once the session is closed,
        rather than letting the call fail on a channel closed with it."""
        if self.closed:
            raise RemoteEnvError(
                f"the session of {self.env_id!r} on {self.connection.address} is closed",
                address=self.connection.address,
                call="",
            )
        return self.session_id

    def _call(self, method: str, request: Any, *, idempotent: bool = False) -> Any:
        try:
            return self.connection.call(method, request, idempotent=idempotent)
        except RemoteEnvError as error:
            self._note(error)
            raise

    def _batched(self, item: pb.BatchItem, method: str) -> pb.EnvState:
        assert self.connection.coalescer is not None
        try:
            return self.connection.coalescer.call(item, method)
        except RemoteEnvError as error:
            self._note(error)
            raise

    def _note(self, error: RemoteEnvError) -> None:
        """Mark the session lost when ``error`` says the server dropped it (or is dropping it), or,
        with a list of servers to choose from, when its server cannot be reached."""
        if isinstance(error, (SessionLostError, RemoteDeadlineError)) or (
            self.servers is not None and isinstance(error, ServerUnavailableError)
        ):
            self.lost = True


def options_json(options: object) -> str:
    """Reset ``options`` as the JSON a ``ResetRequest`` carries ("" for none), checked as a local
    env checks them (:func:`~mrlm.envs.core.reset_options.reset_options`)."""
    checked = reset_options(options)
    if not checked:
        return ""
    try:
        return encode_json(checked)
    except ValueError as error:
        raise ValueError(f"reset options travel to the server as JSON: {error}") from None


#: The seeds a ``ResetRequest`` carries: its field is a signed 64-bit integer, and seeds are not negative.
MAX_WIRE_SEED = 2**63 - 1


def wire_seed(seed: object) -> int:
    """``seed`` as a ``ResetRequest`` carries it; a ``ValueError`` names one the wire cannot (a local
    env takes any non-negative int, the protocol those below 2**63)."""
    value = int(seed)  # type: ignore[call-overload]
    if not 0 <= value <= MAX_WIRE_SEED:
        raise ValueError(f"a remote env's seed must be an int in [0, 2**63), got {value}")
    return value
