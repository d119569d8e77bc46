"""Several env servers behind one client: each session goes to the next server, and stays there.

Env serving grows past one machine by running a server on each (``mrlm-envs serve``, with
``--processes`` for the cores of each) and giving clients the list::

    env = mrlm.envs.make("grpc://envs-a:50051,envs-b:50051/mrlm/Math-v0")

No balancer sits in between. A session owns an env instance on one server, so the choice is made
once per session, on the client: :class:`ServerList` hands the servers out in turn (round robin), and
the session keeps a connection of its own to its server for its whole life (all its calls go there).
gRPC's own load balancing policies pick a server per call, which a session cannot follow. Each list
starts its turn at a server drawn at random (from the system's entropy, so seeding ``random`` in
every process does not line them up): processes given the same list, such as rollout workers that
each make one env, spread over the servers too instead of all starting with the first.

A server that cannot be reached when a session opens is skipped for the next one; the calls of a
session whose server went down fail with :class:`~mrlm.envs.remote.errors.ServerUnavailableError`
naming it, and the session's next ``reset()`` opens a new session on a server that answers.

Clients given the same comma-separated string (``RemoteEnv("a:50051,b:50051", ...)``, remote ids)
share one process-wide :class:`ServerList` per string, so the envs a trainer makes one by one spread
over the servers. A :class:`ServerList` built by hand carries connection settings (token, TLS roots,
deadlines) and its own turn.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mrlm.envs.remote.address import parse_addresses
from mrlm.envs.remote.connection import Connection
from mrlm.envs.remote.errors import ServerUnavailableError

__all__ = ["ServerList", "server_list"]

_T = TypeVar("_T")


class ServerList:
    """Servers hosting the same envs; each new session takes the next one in turn, the first turn
    going to a server drawn at random.

    Args:
        addresses: the servers, as a sequence of addresses or one comma-separated string
            (``"grpc://envs-a:50051,envs-b:50051"``; the first scheme applies to the others).
        **settings: keyword arguments of every :class:`~mrlm.envs.remote.connection.Connection`
            opened to them (``token``, ``root_certificates``, ``timeout_s``, ``retries``...).

    Example:
        >>> servers = ServerList("grpc://envs-a:50051,envs-b:50051")
        >>> servers.addresses
        ['grpc://envs-a:50051', 'grpc://envs-b:50051']
        >>> envs = [RemoteEnv(servers, "mrlm/Math-v0") for _ in range(4)]  # doctest: +SKIP
    """

    def __init__(self, addresses: str | Sequence[str], **settings: Any) -> None:
        parsed = parse_addresses(addresses)
        self.addresses = [f"{'grpcs' if tls else 'grpc'}://{target}" for target, tls in parsed]
        self.settings = settings
        self._turn = itertools.count(secrets.randbelow(len(self.addresses)))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.addresses)

    def __str__(self) -> str:
        """The list as one address string (``grpc://a:50051,b:50051``)."""
        scheme = self.addresses[0].partition("://")[0]
        if all(address.startswith(f"{scheme}://") for address in self.addresses):
            return f"{scheme}://" + ",".join(a.partition("://")[2] for a in self.addresses)
        return ",".join(self.addresses)

    def __repr__(self) -> str:
        return f"ServerList({self.addresses!r})"

    def in_turn(self) -> list[str]:
        """Every address, starting with the one whose turn it is (and moving the turn on)."""
        with self._lock:
            start = next(self._turn) % len(self.addresses)
        return self.addresses[start:] + self.addresses[:start]

    def connect(self, address: str) -> Connection:
        """A new connection to one of the servers, with the list's settings."""
        return Connection(address, **self.settings)

    def first_answer(self, attempt: Callable[[Connection], _T]) -> tuple[Connection, _T]:
        """Run ``attempt`` on a new connection to the server whose turn it is, moving to the next server
        while one cannot be reached; return the connection (the caller's to close) and the result.
        ``attempt`` should make its call without retries (``retries=0``): moving on is the retry.

        The list is gone through ``retries + 1`` times (the connection setting, 4 by default) with a
        growing pause between rounds, as a single connection retries.

        Raises:
            ServerUnavailableError: no server answered; the message names each and why.
            RemoteEnvError: what ``attempt`` raised for any other reason.
        """
        rounds = 1 + int(self.settings.get("retries", 4))
        pause = float(self.settings.get("backoff_s", 0.1))
        failures: dict[str, str] = {}
        for round_number in range(rounds):
            for address in self.in_turn():
                connection = self.connect(address)
                try:
                    return connection, attempt(connection)
                except ServerUnavailableError as error:
                    failures[address] = error.details or str(error)
                    connection.close()
                except BaseException:
                    connection.close()
                    raise
            if round_number + 1 < rounds:
                time.sleep(pause)
                pause = min(2 * pause, 2.0)
        reasons = "; ".join(f"{address}: {reason}" for address, reason in failures.items())
        raise ServerUnavailableError(
            f"no server of {self} answered ({reasons}) [are the servers running and reachable? "
            "(mrlm-envs serve)]",
            address=str(self),
            call="connect",
            code="UNAVAILABLE",
        )


_SHARED: dict[str, ServerList] = {}
_SHARED_LOCK = threading.Lock()


def server_list(address: str | ServerList) -> ServerList | None:
    """The :class:`ServerList` a client should spread its sessions over: ``address`` itself, or the
    process-wide one of a comma-separated string; None for a single address."""
    if isinstance(address, ServerList):
        return address
    if "," not in address:
        return None
    key = address.strip()
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = ServerList(key)
        return shared
