"""Build the class from the skeleton and the implementations that stand. Text only: nothing runs here.

The agents' imports come first, then the skeleton with each implemented method in place of its stub
(under a comment naming its author) and the methods outside the skeleton at the end of the class.
Methods nobody implemented keep their stub.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mrlm.envs.class_completion.tasks import ClassTask


@dataclass(frozen=True)
class Assembly:
    """The assembled module.

    Attributes:
        source: its text.
        spans: ``(agent, first line, last line)`` of each implemented method in ``source`` (1-based).
    """

    source: str
    spans: tuple[tuple[str, int, int], ...]

    def author(self, line: int | None) -> str | None:
        """The agent whose method holds ``line``, or None (the skeleton, imports, unknown)."""
        if line is None:
            return None
        return next((agent for agent, first, last in self.spans if first <= line <= last), None)


def assemble(task: ClassTask, code: Mapping[str, tuple[str, str]], imports: Sequence[str]) -> Assembly:
    """The module for ``code`` (method -> ``(agent, source at column 0)``) and ``imports``."""
    skeleton = task.skeleton.split("\n")
    indent = task.layout.indent
    out: list[str] = [line for statement in imports for line in statement.split("\n")]
    if out:
        out.append("")
    spans: list[tuple[str, int, int]] = []

    def place(name: str) -> None:
        agent, source = code[name]
        out.append(f"{indent}# {agent} writes {name}")
        body = [indent + line if line.strip() else line for line in source.split("\n")]
        spans.append((agent, len(out) + 1, len(out) + len(body)))
        out.extend(body)

    position = 1
    for name, first, last in task.layout.stubs:
        out.extend(skeleton[position - 1 : first - 1])
        if name in code:
            place(name)
        else:
            out.extend(skeleton[first - 1 : last])
        position = last + 1
    out.extend(skeleton[position - 1 : task.layout.class_end])
    stubs = {name for name, _, _ in task.layout.stubs}
    for name in code:
        if name not in stubs:
            out.append("")
            place(name)
    out.extend(skeleton[task.layout.class_end :])
    return Assembly("\n".join(out).rstrip("\n") + "\n", tuple(spans))
