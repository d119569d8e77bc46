"""The runtime modules need only grpcio and protobuf: no grpcio-tools, no NumPy."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

import mrlm.proto

IMPORT_WITHOUT_GRPC_TOOLS = """
import sys
# A None entry in sys.modules makes any import of that name raise ImportError.
sys.modules["grpc_tools"] = None
sys.modules["grpc_tools.protoc"] = None
import mrlm.proto
import mrlm.proto.codegen
import mrlm.proto.json_codec
from mrlm.proto.v1 import env_pb2, env_pb2_grpc
assert mrlm.proto.env_pb2 is env_pb2
assert mrlm.proto.env_pb2_grpc is env_pb2_grpc
env_pb2_grpc.EnvServiceStub
assert "numpy" not in sys.modules, "a runtime module imported numpy"
print("ok")
"""


def test_runtime_modules_import_without_grpc_tools_or_numpy() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT_GRPC_TOOLS], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_version_matches_distribution() -> None:
    assert mrlm.proto.__version__ == importlib.metadata.version("mrlm-proto")


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = mrlm.proto.no_such_thing
