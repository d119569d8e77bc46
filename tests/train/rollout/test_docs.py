"""The Python snippets of docs/multi_agent_rollouts.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "multi_agent_rollouts.md"


def test_the_snippets_of_the_multi_agent_rollouts_doc_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert blocks
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/multi_agent_rollouts.md block {number}", "exec"), namespace)
    assert {row.agent for row in namespace["rows"]} == {"summary", "expansion"}  # type: ignore[attr-defined]
