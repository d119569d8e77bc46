"""Clients of env servers that are themselves Gymnasium and PettingZoo envs.

A server (``mrlm-envs serve``, see :mod:`mrlm.envs.server`) hosts registered envs; each client opens a
session that owns one env instance on the server::

    from mrlm.envs.remote import RemoteEnv

    env = RemoteEnv("127.0.0.1:50051", "mrlm/Math-v0", level=1)   # a gymnasium.Env
    observation, info = env.reset(seed=0)

:class:`RemoteAECEnv` and :class:`RemoteParallelEnv` are PettingZoo envs; :class:`RemoteVectorEnv`
steps many sessions in one round trip. ``mrlm.envs.make("grpc://127.0.0.1:50051/mrlm/Math-v0")``
builds the client of the env's kind, so a config switches between local and remote by its id string.
Failures raise the subclasses of :class:`RemoteEnvError` (see :mod:`mrlm.envs.remote.errors`).

Importing this package registers the ``grpc`` and ``grpcs`` schemes with
:func:`mrlm.envs.registry.register_scheme`; ``mrlm.envs`` imports it the first time such an id is used.
"""

from mrlm.envs.registry import register_scheme
from mrlm.envs.remote.address import REMOTE_SCHEMES, RemoteId, is_remote_id, parse_address, parse_remote_id
from mrlm.envs.remote.aec import RemoteAECEnv
from mrlm.envs.remote.connection import BatchStream, Connection
from mrlm.envs.remote.errors import (
    RemoteArgumentError,
    RemoteAuthError,
    RemoteDeadlineError,
    RemoteEnvArgumentError,
    RemoteEnvError,
    RemoteEnvFailure,
    RemoteEpisodeError,
    ServerBusyError,
    ServerUnavailableError,
    SessionLostError,
    UnknownRemoteEnvError,
)
from mrlm.envs.remote.gym_env import RemoteEnv
from mrlm.envs.remote.make import make_remote, remote_entry
from mrlm.envs.remote.parallel import RemoteParallelEnv
from mrlm.envs.remote.servers import ServerList
from mrlm.envs.remote.vector import RemoteVectorEnv

__all__ = [
    "BatchStream",
    "Connection",
    "RemoteAECEnv",
    "RemoteArgumentError",
    "RemoteAuthError",
    "RemoteDeadlineError",
    "RemoteEnv",
    "RemoteEnvArgumentError",
    "RemoteEnvError",
    "RemoteEnvFailure",
    "RemoteEpisodeError",
    "RemoteId",
    "RemoteParallelEnv",
    "RemoteVectorEnv",
    "ServerBusyError",
    "ServerList",
    "ServerUnavailableError",
    "SessionLostError",
    "UnknownRemoteEnvError",
    "is_remote_id",
    "make_remote",
    "parse_address",
    "parse_remote_id",
    "remote_entry",
]

for _scheme in REMOTE_SCHEMES:
    register_scheme(_scheme, make=make_remote, entry=remote_entry)
