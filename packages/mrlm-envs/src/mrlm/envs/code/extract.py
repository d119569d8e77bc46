"""Find the code in a model's reply. Text only: nothing here parses or runs the reply as Python."""

from __future__ import annotations

import textwrap

from mrlm.envs.code.tasks import definition_pattern

#: Fence labels taken as Python ("" is an unlabelled fence).
PYTHON_LABELS = frozenset({"", "python", "py", "python3", "py3"})


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """The Markdown code blocks of ``text`` as ``(label, code)`` pairs, in order.

    A fence is a line starting with three or more backticks; the label is the first word after them,
    lowercased. A block left open at the end (a reply cut off mid-code) runs to the end of the text.
    """
    blocks: list[tuple[str, str]] = []
    label: str | None = None
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if label is None:
            if stripped.startswith("```"):
                words = stripped.lstrip("`").split()
                label = words[0].lower() if words else ""
                lines = []
        elif stripped.startswith("```") and not stripped.strip("`"):
            blocks.append((label, "".join(lines)))
            label = None
        else:
            lines.append(line)
    if label is not None:
        blocks.append((label, "".join(lines)))
    return blocks


def defines(code: str, name: str) -> bool:
    """True when ``code`` has a top-level ``def``, ``async def`` or ``class`` named ``name``."""
    return definition_pattern(name).search(code) is not None


def extract_code(reply: str, entry_point: str | None = None) -> str | None:
    """The code of a reply, dedented, or None when it holds none.

    - Reasoning in ``<think>...</think>`` is dropped: only the text after the last ``</think>`` counts.
    - Fenced blocks labelled as Python or unlabelled are candidates; if there are none, blocks with any
      label are. Of the candidates, the last one that defines ``entry_point`` wins, else the last one.
    - A reply without fences is taken whole, as raw code.
    """
    if "</think>" in reply:
        reply = reply.rsplit("</think>", 1)[1]
    blocks = [(label, code) for label, code in fenced_blocks(reply) if code.strip()]
    if blocks:
        python = [code for label, code in blocks if label in PYTHON_LABELS]
        candidates = python or [code for _, code in blocks]
        candidates = [textwrap.dedent(code) for code in candidates]
        chosen = candidates[-1]
        if entry_point is not None:
            defining = [code for code in candidates if defines(code, entry_point)]
            chosen = defining[-1] if defining else chosen
        return chosen.strip("\n") + "\n"
    if "```" in reply or not reply.strip():
        return None  # only empty fences
    return textwrap.dedent(reply).strip("\n") + "\n"
