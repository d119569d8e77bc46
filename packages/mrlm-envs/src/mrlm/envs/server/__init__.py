"""Serving registered envs over gRPC (``mrlm-envs serve``), one env instance per client session.

The server implements ``mrlm.v1.EnvService`` (``mrlm/proto/v1/env.proto``) plus the standard health
service and server reflection::

    from mrlm.envs.server import serve

    server = serve(envs=("mrlm/Math-v0",), port=0)  # a free port
    print(server.address)
    ...
    server.stop()  # closes every session's env

Clients are in :mod:`mrlm.envs.remote`. Layout: ``config`` (settings), ``catalog`` (hosted envs),
``drivers`` (one env instance per API), ``sessions`` (sessions and their store), ``runner`` (env calls
with deadlines), ``servicer`` (the rpcs), ``auth`` (the token check), ``server`` (start, stop, signals).
"""

from mrlm.envs.server.config import ServerConfig
from mrlm.envs.server.server import SERVICE_NAME, EnvServer, run, serve

__all__ = ["SERVICE_NAME", "EnvServer", "ServerConfig", "run", "serve"]
