"""Serving registered envs over gRPC (``mrlm-envs serve``), one env instance per client session.

The server implements ``mrlm.v1.EnvService`` (``mrlm/proto/v1/env.proto``) plus the standard health
service and server reflection::

    from mrlm.envs.server import serve

    server = serve(envs=("mrlm/Math-v0",), port=0)  # a free port
    print(server.address)
    ...
    server.stop()  # closes every session's env

Clients are in :mod:`mrlm.envs.remote`. Layout: ``config`` (settings), ``client_args`` and ``allowed``
(what a client may set), ``catalog`` (hosted envs), ``drivers`` (one env instance per API),
``payload`` (decoding JSON from clients), ``sessions`` (sessions and their store), ``runner`` (env
calls with deadlines), ``servicer`` (the rpcs), ``auth`` (the token check), ``streams`` (the budget of
long-lived calls), ``health`` (the health service), ``connections`` (which clients are still
connected), ``server`` (start, stop, signals), ``processes`` (several server processes on one port).

The names below are imported on first use: env registrations import ``client_args``, which must not
pull gRPC into every ``import mrlm.envs``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mrlm.envs.server.config import ServerConfig
    from mrlm.envs.server.processes import ProcessGroup, start_processes
    from mrlm.envs.server.server import SERVICE_NAME, EnvServer, run, serve

__all__ = ["SERVICE_NAME", "EnvServer", "ProcessGroup", "ServerConfig", "run", "serve", "start_processes"]

_HOMES = {
    "ServerConfig": "mrlm.envs.server.config",
    "SERVICE_NAME": "mrlm.envs.server.server",
    "EnvServer": "mrlm.envs.server.server",
    "run": "mrlm.envs.server.server",
    "serve": "mrlm.envs.server.server",
    "ProcessGroup": "mrlm.envs.server.processes",
    "start_processes": "mrlm.envs.server.processes",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
