"""Regenerate the Python modules of ``env.proto`` with grpcio-tools.

``generate(out_dir)`` runs protoc on ``mrlm/proto/v1/env.proto`` and writes ``env_pb2.py``,
``env_pb2.pyi`` and ``env_pb2_grpc.py`` under ``out_dir/mrlm/proto/v1/``. Running the module,
``python -m mrlm.proto.codegen``, regenerates them in place, next to the ``.proto`` file.

grpcio-tools is a development dependency only, so it is imported when ``generate`` runs, never
when this module is imported.
"""

from __future__ import annotations

from pathlib import Path

#: Root of the import tree holding ``mrlm/proto/v1/env.proto`` (the ``src`` directory in a checkout).
PROTO_ROOT = Path(__file__).resolve().parents[2]

#: The ``.proto`` file, relative to ``PROTO_ROOT``; the relative path fixes the generated import
#: paths, so that ``env_pb2_grpc`` imports ``mrlm.proto.v1.env_pb2``.
PROTO_FILE = Path("mrlm/proto/v1/env.proto")

#: Generated files, relative to the output directory.
GENERATED_FILES = (
    Path("mrlm/proto/v1/env_pb2.py"),
    Path("mrlm/proto/v1/env_pb2.pyi"),
    Path("mrlm/proto/v1/env_pb2_grpc.py"),
)


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on ``env.proto`` and return the paths of the generated files.

    The files are written under ``out_dir`` at the paths of ``GENERATED_FILES``; ``out_dir`` is
    created if missing. Raises ``RuntimeError`` if grpcio-tools is not installed or protoc fails.
    """
    try:
        # Lazy: only regenerating needs grpcio-tools.
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as error:
        raise RuntimeError(
            "regenerating the protobuf modules needs grpcio-tools (in the workspace's dev group)"
        ) from error

    out_dir.mkdir(parents=True, exist_ok=True)
    # grpc_tools bundles the well-known protos (google/protobuf/*.proto) next to itself.
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        # Relative to PROTO_ROOT, so that protoc derives module names from it.
        PROTO_FILE.as_posix(),
    ]
    status = protoc.main(args)
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status} on {PROTO_ROOT / PROTO_FILE}")
    return [out_dir / relative for relative in GENERATED_FILES]


def main() -> None:
    """Regenerate the modules in place and print their paths."""
    for path in generate(PROTO_ROOT):
        print(path)


if __name__ == "__main__":
    main()
