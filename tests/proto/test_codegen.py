"""The committed generated modules are exactly what ``python -m mrlm.proto.codegen`` produces."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mrlm.proto import codegen

PYPROJECT = Path(__file__).resolve().parents[2] / "packages" / "mrlm-proto" / "pyproject.toml"


def test_generate_writes_the_listed_files(tmp_path: Path) -> None:
    generated = codegen.generate(tmp_path)
    written = sorted(path for path in tmp_path.rglob("*") if path.is_file())
    assert written == sorted(generated)
    assert [path.relative_to(tmp_path) for path in generated] == list(codegen.GENERATED_FILES)


def test_committed_modules_are_up_to_date(tmp_path: Path) -> None:
    for fresh in codegen.generate(tmp_path):
        committed = codegen.PROTO_ROOT / fresh.relative_to(tmp_path)
        assert committed.is_file(), f"{committed} is missing: run `python -m mrlm.proto.codegen`"
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed} differs from what env.proto generates: run `python -m mrlm.proto.codegen`"
        )


def test_grpc_module_imports_messages_by_full_path() -> None:
    grpc_module = (codegen.PROTO_ROOT / "mrlm/proto/v1/env_pb2_grpc.py").read_text()
    assert "from mrlm.proto.v1 import env_pb2 as" in grpc_module


def test_declared_runtime_bounds_match_generated_code() -> None:
    """The generated modules refuse older runtimes at import, so the package must not allow them."""
    v1 = codegen.PROTO_ROOT / "mrlm/proto/v1"
    grpc_version = re.search(r"GRPC_GENERATED_VERSION = '([\d.]+)'", (v1 / "env_pb2_grpc.py").read_text())
    protobuf_version = re.search(
        r"ValidateProtobufRuntimeVersion\(\s*\S+,\s*(\d+),\s*(\d+),\s*(\d+),", (v1 / "env_pb2.py").read_text()
    )
    assert grpc_version is not None
    assert protobuf_version is not None
    pyproject = PYPROJECT.read_text()
    assert f'"grpcio>={grpc_version.group(1)}"' in pyproject
    assert f'"protobuf>={".".join(protobuf_version.groups())}"' in pyproject


def test_generate_explains_missing_grpc_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import raise ImportError.
    monkeypatch.setitem(sys.modules, "grpc_tools", None)
    with pytest.raises(RuntimeError, match="grpcio-tools"):
        codegen.generate(tmp_path)
