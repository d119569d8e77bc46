"""Remote ids in ``mrlm.envs.make`` and ``mrlm.envs.env_entry``: ``grpc://host:port/namespace/Name-vN``
(``grpc://host1:port1,host2:port2/namespace/Name-vN`` for several servers)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mrlm.envs.registry import ENV_KINDS, EnvArgumentError, EnvEntry, EnvKind
from mrlm.envs.remote.address import parse_remote_id
from mrlm.envs.remote.aec import RemoteAECEnv
from mrlm.envs.remote.connection import Connection
from mrlm.envs.remote.convert import KIND_FROM_PROTO
from mrlm.envs.remote.errors import UnknownRemoteEnvError
from mrlm.envs.remote.gym_env import RemoteEnv
from mrlm.envs.remote.parallel import RemoteParallelEnv
from mrlm.envs.remote.servers import ServerList

__all__ = ["CLIENTS", "make_remote", "remote_entry"]

#: The client class of each kind.
CLIENTS: dict[EnvKind, Callable[..., Any]] = {
    "gymnasium": RemoteEnv,
    "aec": RemoteAECEnv,
    "parallel": RemoteParallelEnv,
}


def make_remote(remote_id: str, *, kind: EnvKind | None = None, **kwargs: Any) -> Any:
    """The client env for ``remote_id``: a :class:`RemoteEnv`, :class:`RemoteAECEnv` or
    :class:`RemoteParallelEnv` (the env's native kind, asked of the server, when ``kind`` is None).

    The token and TLS roots come from ``MRLM_ENVS_TOKEN`` and ``MRLM_ENVS_TLS_CA``.
    """
    parsed = parse_remote_id(remote_id)
    if kind is not None and kind not in ENV_KINDS:
        raise EnvArgumentError(f"unknown kind {kind!r}; kinds are {', '.join(ENV_KINDS)}")
    chosen = kind if kind is not None else remote_entry(remote_id).kinds[0]
    return CLIENTS[chosen](parsed.address, parsed.env_id, **kwargs)


def remote_entry(remote_id: str) -> EnvEntry:
    """The registry entry of a remote id, from the server's listing (one ``ListEnvs`` call).

    Raises:
        UnknownRemoteEnvError: the server does not host the env (the message names those it hosts).
        RemoteEnvError: the server cannot be reached.
    """
    parsed = parse_remote_id(remote_id)
    if len(parsed.targets) > 1:  # the servers of a list host the same envs: ask the first that answers
        connection, listing = ServerList(parsed.address).first_answer(lambda c: c.list_envs(retries=0))
        connection.close()
    else:
        with Connection(parsed.address) as connection:
            listing = connection.list_envs()
    for info in listing:
        if info.env_id == parsed.env_id:
            kinds = tuple(KIND_FROM_PROTO[k] for k in info.kinds if k in KIND_FROM_PROTO)
            return EnvEntry(
                id=remote_id,
                kinds=kinds,
                description=info.description,
                entry_points={k: functools.partial(CLIENTS[k], parsed.address, parsed.env_id) for k in kinds},
            )
    hosted = ", ".join(info.env_id for info in listing) or "(none)"
    raise UnknownRemoteEnvError(
        f"{parsed.address} does not host {parsed.env_id!r}; it hosts: {hosted}",
        address=parsed.address,
        call="ListEnvs",
        code="NOT_FOUND",
        details=f"unknown env id {parsed.env_id!r}",
    )
