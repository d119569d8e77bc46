"""Server addresses and remote env ids.

A server address is ``host:port``, optionally with a scheme: ``grpc://host:port`` (plain TCP) or
``grpcs://host:port`` (TLS). A remote env id is an address followed by the env id the server hosts::

    grpc://127.0.0.1:50051/mrlm/Math-v0
    grpcs://envs.example.org:443/mrlm/Debate-v0

so that a config switches between a local and a remote env by changing one string. The port defaults
to 50051, the port of ``mrlm-envs serve``; IPv6 hosts are written in brackets (``[::1]:50051``).

Several servers that host the same envs are listed with commas, the scheme written once::

    grpc://envs-a:50051,envs-b:50051/mrlm/Math-v0

and each session the clients open goes to the next of them (see ``mrlm.envs.remote.servers``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_PORT",
    "REMOTE_SCHEMES",
    "RemoteId",
    "is_remote_id",
    "parse_address",
    "parse_addresses",
    "parse_remote_id",
]

DEFAULT_PORT = 50051

#: Scheme of a remote id -> whether the channel uses TLS.
REMOTE_SCHEMES = {"grpc": False, "grpcs": True}


@dataclass(frozen=True)
class RemoteId:
    """A parsed remote env id.

    Attributes:
        target: ``host:port``, what gRPC dials (several, comma-separated, for a list of servers).
        env_id: the id the server hosts, such as ``mrlm/Math-v0``.
        tls: whether the scheme asks for TLS (``grpcs://``).
    """

    target: str
    env_id: str
    tls: bool

    @property
    def address(self) -> str:
        """The server address (or the list of them) with its scheme, as accepted by the clients."""
        return f"{'grpcs' if self.tls else 'grpc'}://{self.target}"

    @property
    def targets(self) -> list[str]:
        """Each server's ``host:port``: one, or several for a list of servers."""
        return self.target.split(",")

    def __str__(self) -> str:
        return f"{self.address}/{self.env_id}"


def is_remote_id(text: str) -> bool:
    """Whether ``text`` names an env on a server (it starts with ``grpc://`` or ``grpcs://``)."""
    return any(text.startswith(f"{scheme}://") for scheme in REMOTE_SCHEMES)


def parse_address(address: str) -> tuple[str, bool]:
    """Split a server address into the ``host:port`` gRPC dials and whether to use TLS.

    ``"127.0.0.1:50051"`` and ``"grpc://127.0.0.1:50051"`` are plain, ``"grpcs://host:443"`` is TLS;
    a missing port is :data:`DEFAULT_PORT`. Raises ``ValueError`` for an empty host or a bad port.
    """
    tls = False
    rest = address.strip()
    scheme, sep, after = rest.partition("://")
    if sep:
        if scheme not in REMOTE_SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r} in {address!r}; use grpc:// or grpcs://")
        tls, rest = REMOTE_SCHEMES[scheme], after
    rest = rest.rstrip("/")
    if "/" in rest:
        raise ValueError(f"{address!r} is not a server address (host:port); did you pass an env id?")
    if "," in rest:
        raise ValueError(
            f"{address!r} lists several servers: a Connection dials one; give the list to a client env "
            "or to ServerList, which spread sessions over them"
        )
    return _with_port(rest, address), tls


def parse_addresses(addresses: str | Sequence[str]) -> list[tuple[str, bool]]:
    """Split a list of server addresses into what gRPC dials and whether to use TLS, for each.

    ``addresses`` is a sequence of addresses, or one string of them separated by commas; a scheme
    written on the first applies to those after it that have none (``"grpcs://a:443,b:443"`` is two TLS
    servers). Raises ``ValueError`` for an empty list or a malformed address.
    """
    parts = addresses.split(",") if isinstance(addresses, str) else list(addresses)
    parsed: list[tuple[str, bool]] = []
    scheme = ""
    for part in (part.strip() for part in parts):
        if not part:
            raise ValueError(f"an empty address in {addresses!r}")
        if "://" in part:
            scheme = part.partition("://")[0] + "://"
        elif scheme:
            part = scheme + part
        parsed.append(parse_address(part))
    if not parsed:
        raise ValueError("no server address given")
    return parsed


def parse_remote_id(text: str) -> RemoteId:
    """Parse ``grpc://host:port/env_id`` (or ``grpcs://``); ``ValueError`` names what is missing."""
    if not is_remote_id(text):
        raise ValueError(f"{text!r} is not a remote env id: expected grpc://host:port/namespace/Name-vN")
    scheme, _, rest = text.partition("://")
    target, slash, env_id = rest.partition("/")
    if not slash or not env_id:
        raise ValueError(f"{text!r} names no env: expected {scheme}://host:port/namespace/Name-vN")
    targets = ",".join(_with_port(part.strip(), text) for part in target.split(","))
    return RemoteId(target=targets, env_id=env_id, tls=REMOTE_SCHEMES[scheme])


def _with_port(hostport: str, original: str) -> str:
    if hostport.startswith("["):  # [IPv6]:port
        host, bracket, port = hostport[1:].partition("]")
        if not bracket:
            raise ValueError(f"unclosed '[' in the address of {original!r}")
        host = f"[{host}]"
        port = port.removeprefix(":")
    else:
        host, _, port = hostport.partition(":")
    if not host or host == "[]":
        raise ValueError(f"no host in {original!r}")
    if not port:
        return f"{host}:{DEFAULT_PORT}"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad port {port!r} in {original!r}")
    return f"{host}:{int(port)}"
