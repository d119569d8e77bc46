"""The Python snippet of docs/evaluation.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "evaluation.md"


def test_the_snippet_of_the_evaluation_doc_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "docs/evaluation.md", "exec"), namespace)
    sampled = namespace["sampled"]
    assert sorted(sampled.overall.pass_at) == [1, 2, 4]  # type: ignore[attr-defined]
    assert sampled.overall.episodes == 12  # type: ignore[attr-defined]
