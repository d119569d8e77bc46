"""Sessions: one env instance each, its calls serialised, closed exactly once; and the store of them.

The store only registers sessions; whoever takes one out of it closes it (:meth:`Session.retire`), on
a worker with a deadline, since closing an env is an env call like any other. A session may be
closed while one of its calls runs (a client's CloseSession, idle expiry racing a
late call, a call that ran past its deadline, shutdown). Closing never waits for that call: the
session is marked closed at once (later calls fail with NOT_FOUND) and the env is closed by whichever
finishes last, the closer or the running call.

A session id starts with the instance tag of the store that made it (random per server process), so
that a call reaching a process that does not hold its session (a server of several processes whose
client reconnected to another one, or a server that restarted) fails with a message that says so.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import grpc

from mrlm.envs.registry import EnvKind
from mrlm.envs.server.drivers import Driver
from mrlm.envs.server.errors import RequestError

__all__ = ["Session", "SessionStore"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Separates the instance tag from the secret part of a session id.
_TAG_END = "_"


class Session:
    """One client session: an env instance behind a driver.

    Args:
        env_id: the id the env was opened as.
        driver: drives the env instance; closed when the session closes.
        peer: the connection of the client (``context.peer()``); each call updates it.
        kwargs_bytes: the size of the keyword arguments it was opened with (the store's share).
        instance: the tag of the server process that holds it, the id's prefix.
    """

    def __init__(
        self, env_id: str, driver: Driver, peer: str = "", kwargs_bytes: int = 0, instance: str = ""
    ) -> None:
        # Unguessable: with the token, the id is what lets a client act on an env.
        secret = secrets.token_hex(16)
        self.id = f"{instance}{_TAG_END}{secret}" if instance else secret
        self.env_id = env_id
        self.kind: EnvKind = driver.kind
        self.driver = driver
        self.peer = peer
        self.kwargs_bytes = kwargs_bytes
        self.absent_since: float | None = None  # when its peer was first seen disconnected
        self._turn = threading.Lock()  # one env call at a time
        self._flags = threading.Lock()  # guards the fields below
        self._users = 0  # calls waiting for, or holding, the turn
        self._closing = False
        self._driver_closed = False
        self._last_used = time.monotonic()

    def call(self, fn: Callable[[Driver], _T]) -> _T:
        """Run ``fn(driver)`` after the session's earlier calls; NOT_FOUND once the session is closed."""
        with self._flags:
            if self._closing:
                raise self._gone()
            self._users += 1
        try:
            with self._turn:
                if self._closing:
                    raise self._gone()
                return fn(self.driver)
        finally:
            with self._flags:
                self._users -= 1
                self._last_used = time.monotonic()
                close_now = self._closing and self._users == 0 and not self._driver_closed
                if close_now:
                    self._driver_closed = True
            if close_now:
                self._close_driver()

    def retire(self) -> None:
        """Close the session: at once if idle, else when its running call returns. Idempotent."""
        with self._flags:
            if self._closing:
                return
            self._closing = True
            close_now = self._users == 0
            if close_now:
                self._driver_closed = True
        if close_now:
            self._close_driver()

    def idle_for(self, now: float) -> float | None:
        """Seconds since the last call ended; None while a call runs or waits."""
        with self._flags:
            return None if self._users else now - self._last_used

    def _gone(self) -> RequestError:
        return RequestError(grpc.StatusCode.NOT_FOUND, f"session {self.id} ({self.env_id}) is closed")

    def _close_driver(self) -> None:
        try:
            self.driver.close()
        except Exception:  # one env failing to close must not stop the others from closing
            _log.exception("closing the env of session %s (%s) failed", self.id, self.env_id)
        _log.info("session %s closed (%s)", self.id, self.env_id)


class SessionStore:
    """The open sessions, at most ``max_sessions`` of them (sessions being opened count too), holding
    at most ``max_kwargs_bytes`` bytes of keyword arguments together (inline records, mostly).

    Attributes:
        instance: a random tag of this store, the prefix of the ids of its sessions
            (:meth:`new_session`); it names this server process in errors.
        process: how this server process is named in errors (``process 2, pid 4242``).
    """

    def __init__(self, max_sessions: int, max_kwargs_bytes: int | None = None, process: str = "") -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self.max_sessions = max_sessions
        self.max_kwargs_bytes = max_kwargs_bytes
        self.instance = secrets.token_hex(4)
        self.process = process or f"pid {os.getpid()}"
        self._sessions: dict[str, Session] = {}
        self._opening = 0
        self._kwargs_bytes = 0  # of the open sessions and of those being opened
        self._lock = threading.Lock()
        self.opened_total = 0
        # Whether channelz has ever named the peer of a session: only then is a peer missing from
        # its list taken for a closed connection (peers named some other way are never reclaimed).
        self._peers_agree = False

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    @property
    def kwargs_bytes(self) -> int:
        """Bytes of keyword arguments held by the open sessions (and those being opened)."""
        return self._kwargs_bytes

    @contextmanager
    def slot(self, kwargs_bytes: int = 0) -> Iterator[None]:
        """Hold room for one session and its keyword arguments while it is built; RESOURCE_EXHAUSTED
        when there is none. The bytes stay counted if the session is added, until it is taken out."""
        with self._lock:
            if len(self._sessions) + self._opening >= self.max_sessions:
                raise RequestError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"the server holds its maximum of {self.max_sessions} sessions (--max-sessions); "
                    "close sessions you no longer use",
                )
            if (
                self.max_kwargs_bytes is not None
                and self._kwargs_bytes + kwargs_bytes > self.max_kwargs_bytes
            ):
                raise RequestError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"the open sessions hold the server's maximum of {self.max_kwargs_bytes} bytes of keyword "
                    "arguments (--max-kwargs-bytes-total); close sessions, or send fewer inline records",
                )
            self._opening += 1
            self._kwargs_bytes += kwargs_bytes
        built = False
        try:
            yield
            built = True
        finally:
            with self._lock:
                self._opening -= 1
                if not built:  # the session failed to open: its bytes were never held
                    self._kwargs_bytes -= kwargs_bytes

    def new_session(self, env_id: str, driver: Driver, peer: str = "", kwargs_bytes: int = 0) -> Session:
        """A session whose id carries this store's instance tag (register it with :meth:`add`)."""
        return Session(env_id, driver, peer=peer, kwargs_bytes=kwargs_bytes, instance=self.instance)

    def add(self, session: Session) -> None:
        """Register a new session (inside :meth:`slot`, whose bytes it then holds)."""
        with self._lock:
            self._sessions[session.id] = session
            self.opened_total += 1

    def get(self, session_id: str) -> Session:
        """The open session ``session_id``; NOT_FOUND if there is none."""
        session = self._sessions.get(session_id)  # a dict read is atomic; no lock on the hot path
        if session is None:
            raise RequestError(grpc.StatusCode.NOT_FOUND, self._unknown(session_id))
        return session

    def take(self, session_id: str) -> Session:
        """Remove and return the open session ``session_id`` (to close it); NOT_FOUND if there is none."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
            if session is not None:
                self._kwargs_bytes -= session.kwargs_bytes
        if session is None:
            raise RequestError(grpc.StatusCode.NOT_FOUND, f"unknown session {session_id!r}")
        return session

    def discard(self, session: Session) -> None:
        """Remove ``session`` if it is still registered (after a deadline, say)."""
        with self._lock:
            if self._sessions.get(session.id) is session:
                self._remove(session)

    def take_idle(self, idle_timeout_s: float) -> list[Session]:
        """Remove and return the sessions idle for more than ``idle_timeout_s`` (to close them)."""
        now = time.monotonic()
        with self._lock:
            expired = [
                session
                for session in self._sessions.values()
                if (idle := session.idle_for(now)) is not None and idle > idle_timeout_s
            ]
            for session in expired:
                self._remove(session)
        for session in expired:
            _log.info("session %s (%s) expired after %.3g s idle", session.id, session.env_id, idle_timeout_s)
        return expired

    def take_disconnected(self, connected: frozenset[str], grace_s: float) -> list[Session]:
        """Remove and return the sessions whose client's connection has been gone for ``grace_s``.

        Args:
            connected: the peers with an open connection now (see ``connections.connected_peers``).
            grace_s: how long a session outlives its peer's connection.

        A session with a call under way is kept (its client is waiting for the reply), and so is every
        session until ``connected`` has named the peer of one: peers that channelz names differently
        from ``context.peer()`` must not look disconnected.
        """
        now = time.monotonic()
        gone: list[Session] = []
        with self._lock:
            if not self._peers_agree:
                self._peers_agree = any(session.peer in connected for session in self._sessions.values())
                if not self._peers_agree:
                    return []
            for session in self._sessions.values():
                if not session.peer or session.peer in connected:
                    session.absent_since = None
                    continue
                if session.absent_since is None:
                    session.absent_since = now
                if now - session.absent_since >= grace_s and session.idle_for(now) is not None:
                    gone.append(session)
            for session in gone:
                self._remove(session)
        for session in gone:
            _log.info(
                "session %s (%s): its client disconnected (%s)", session.id, session.env_id, session.peer
            )
        return gone

    def take_all(self) -> list[Session]:
        """Remove and return every session (to close them)."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._kwargs_bytes -= sum(session.kwargs_bytes for session in sessions)
        return sessions

    def _unknown(self, session_id: str) -> str:
        """Why ``session_id`` is not here: another process's (or an earlier run's) session, or one closed."""
        tag, sep, _ = session_id.partition(_TAG_END)
        if sep and tag != self.instance:
            return (
                f"unknown session {session_id!r}: it was opened on another server process (instance {tag}) "
                f"than the one this call reached (instance {self.instance}, {self.process}). A session "
                "lives in the process that opened it: the client's connection was made again and reached "
                "another process of the server (mrlm-envs serve --processes), or the server restarted"
            )
        return (
            f"unknown session {session_id!r}: never opened, closed, expired after idling, "
            "closed after a deadline, or opened before the server restarted"
        )

    def _remove(self, session: Session) -> None:
        """Unregister ``session`` (holding the lock)."""
        del self._sessions[session.id]
        self._kwargs_bytes -= session.kwargs_bytes
