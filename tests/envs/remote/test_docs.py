"""The Python snippets of docs/remote.md run as written, against a server on a free port."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from mrlm.envs.server import ServerConfig, serve

DOC = Path(__file__).resolve().parents[3] / "docs" / "remote.md"

#: The address the snippets use; the test's server listens elsewhere (tests never use fixed ports).
DOC_ADDRESS = "127.0.0.1:50051"


def test_the_snippets_of_docs_remote_md_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    runnable = [block for block in blocks if "example.org" not in block]  # that one needs a real host
    assert len(runnable) >= 6 and any(DOC_ADDRESS in block for block in runnable)
    with serve(envs=("mrlm/Math-v0", "mrlm/Debate-v0"), port=0) as server:
        namespace: dict[str, object] = {}
        for number, block in enumerate(runnable):
            code = compile(
                block.replace(DOC_ADDRESS, server.address), f"docs/remote.md block {number}", "exec"
            )
            exec(code, namespace)
        assert len(server.store) == 0  # every snippet closes what it opens


def test_docs_remote_md_names_every_serve_flag() -> None:
    text = DOC.read_text()
    flags = [f"--{field.name.replace('_', '-')}" for field in dataclasses.fields(ServerConfig)]
    missing = [flag for flag in flags if f"`{flag}" not in text]
    assert not missing, f"docs/remote.md does not describe {missing}"
