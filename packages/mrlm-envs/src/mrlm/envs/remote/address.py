"""Server addresses and remote env ids.

A server address is ``host:port``, optionally with a scheme: ``grpc://host:port`` (plain TCP) or
``grpcs://host:port`` (TLS). A remote env id is an address followed by the env id the server hosts::

    grpc://127.0.0.1:50051/mrlm/Math-v0
    grpcs://envs.example.org:443/mrlm/Debate-v0

so that a config switches between a local and a remote env by changing one string. The port defaults
to 50051, the port of ``mrlm-envs serve``; IPv6 hosts are written in brackets (``[::1]:50051``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PORT", "REMOTE_SCHEMES", "RemoteId", "is_remote_id", "parse_address", "parse_remote_id"]

DEFAULT_PORT = 50051

#: Scheme of a remote id -> whether the channel uses TLS.
REMOTE_SCHEMES = {"grpc": False, "grpcs": True}


@dataclass(frozen=True)
class RemoteId:
    """A parsed remote env id.

    Attributes:
        target: ``host:port``, what gRPC dials.
        env_id: the id the server hosts, such as ``mrlm/Math-v0``.
        tls: whether the scheme asks for TLS (``grpcs://``).
    """

    target: str
    env_id: str
    tls: bool

    @property
    def address(self) -> str:
        """The server address with its scheme, as accepted by the clients."""
        return f"{'grpcs' if self.tls else 'grpc'}://{self.target}"

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
    return _with_port(rest, address), tls


def parse_remote_id(text: str) -> RemoteId:
    """Parse ``grpc://host:port/env_id`` (or ``grpcs://``); ``ValueError`` names what is missing."""
    if not is_remote_id(text):
        raise ValueError(f"{text!r} is not a remote env id: expected grpc://host:port/namespace/Name-vN")
    scheme, _, rest = text.partition("://")
    target, slash, env_id = rest.partition("/")
    if not slash or not env_id:
        raise ValueError(f"{text!r} names no env: expected {scheme}://host:port/namespace/Name-vN")
    return RemoteId(target=_with_port(target, text), env_id=env_id, tls=REMOTE_SCHEMES[scheme])


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
