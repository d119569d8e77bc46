"""Which clients are still connected: the peers of the open connections of this process's servers.

gRPC tells a handler its call's peer (``context.peer()``, e.g. ``ipv4:10.0.0.7:51234``: one TCP
connection) but gives no notice when a connection closes. Its channelz registry does list every
server's open sockets, named after the same peers, and that is what :func:`connected_peers` reads:
the functions are those grpcio serves through the ``grpcio-channelz`` package, compiled into grpcio
itself. A client that dies (SIGKILL, a crash, a lost machine once TCP keepalive notices) drops its
connection, its peer leaves the list, and the server can close its sessions within seconds instead
of waiting for the idle timeout.

If this gRPC build has no channelz, :func:`connected_peers` returns None and sessions are reclaimed by
the idle timeout only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["connected_peers"]

_log = logging.getLogger(__name__)

#: Sockets asked for per channelz call (it pages through longer lists).
_PAGE = 500


def connected_peers() -> frozenset[str] | None:
    """The peers of every connection open on a gRPC server of this process; None if unknown."""
    try:
        from grpc._cython import cygrpc

        peers: set[str] = set()
        for server_id in _ids(lambda start: cygrpc.channelz_get_servers(start), "server", "serverId"):
            for name in _socket_names(cygrpc, server_id):
                # "chttp2 ipv4:127.0.0.1:5012": the transport, then the peer as context.peer() has it.
                peers.add(name.rsplit(" ", 1)[-1])
        return frozenset(peers)
    except Exception:  # no channelz in this build, or a format this code does not know
        _log.debug("channelz is unavailable: sessions are reclaimed by idle expiry only", exc_info=True)
        return None


def _ids(fetch: Callable[[int], Any], key: str, id_key: str) -> list[int]:
    ids: list[int] = []
    start = 0
    for _ in range(10_000):  # pages; bounded so that a misbehaving registry cannot loop forever
        page = json.loads(fetch(start))
        refs = [entry["ref"][id_key] for entry in page.get(key, [])]
        ids.extend(int(ref) for ref in refs)
        if page.get("end", True) or not refs:
            break
        start = ids[-1] + 1
    return ids


def _socket_names(cygrpc: Any, server_id: int) -> list[str]:
    names: list[str] = []
    start = 0
    for _ in range(10_000):
        page = json.loads(cygrpc.channelz_get_server_sockets(server_id, start, _PAGE))
        refs = page.get("socketRef", [])
        names.extend(str(ref.get("name", "")) for ref in refs)
        if page.get("end", True) or not refs:
            break
        start = int(refs[-1]["socketId"]) + 1
    return names
