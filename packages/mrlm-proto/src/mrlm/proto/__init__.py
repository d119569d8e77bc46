"""The gRPC/protobuf contract between MRLM environment servers and their clients.

The contract is ``mrlm/proto/v1/env.proto`` (protobuf package ``mrlm.v1``): the ``EnvService`` rpcs
and their messages. Its generated Python modules live in ``mrlm.proto.v1``::

    from mrlm.proto.v1 import env_pb2, env_pb2_grpc

and are also reachable as ``mrlm.proto.env_pb2`` and ``mrlm.proto.env_pb2_grpc``, imported on
first use. ``mrlm.proto.json_codec`` encodes the JSON carried by the ``*_json`` fields;
``python -m mrlm.proto.codegen`` regenerates the modules after ``env.proto`` changes.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrlm.proto.v1 import env_pb2 as env_pb2
    from mrlm.proto.v1 import env_pb2_grpc as env_pb2_grpc

__all__ = ["__version__", "env_pb2", "env_pb2_grpc"]

__version__ = "0.1.0"

# Imported on first use rather than here, so that ``python -m mrlm.proto.codegen`` still runs when
# the generated modules are missing or refuse the installed protobuf/grpcio runtime.
_GENERATED = frozenset({"env_pb2", "env_pb2_grpc"})


def __getattr__(name: str) -> ModuleType:
    """Import ``env_pb2`` and ``env_pb2_grpc`` from ``mrlm.proto.v1`` when first asked for."""
    if name in _GENERATED:
        module = importlib.import_module(f"mrlm.proto.v1.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
