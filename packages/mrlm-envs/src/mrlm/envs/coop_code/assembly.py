"""Build the team's program from each agent's reply. Text and syntax trees only: nothing runs here.

Each agent owns one part (a function). From its reply the code is taken as in ``mrlm/Code-v0`` (the
last Python block, preferring one that defines the part; the whole reply when it has no fence). A
reply that is only a function body completes the part's stub. Every top-level statement that can
bind a teammate's function name at module level (its ``def``, an assignment, an ``if`` or ``try``
holding one, a ``global`` declaration) is dropped, so that an agent cannot replace a teammate's
part. The program is the task's context followed by each agent's code, in agent order.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from mrlm.envs.code.extract import extract_code
from mrlm.envs.coop_code.syntax import binds_any, first_line, module_bindings, parse
from mrlm.envs.coop_code.tasks import Part

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Contribution:
    """What one agent's reply adds to the program.

    Attributes:
        agent: the agent.
        part: the name of the function it owns.
        code: the code that goes into the program ("" when the reply held none).
        parses: ``code`` is valid Python syntax (False when it is empty).
        defined: ``code`` binds the part's name at module level.
        dropped: teammates' names whose bindings were removed from the reply.
        tree: the syntax tree of ``code`` (None when it does not parse), for static checks.
    """

    agent: str
    part: str
    code: str
    parses: bool
    defined: bool
    dropped: tuple[str, ...] = ()
    tree: ast.Module | None = field(default=None, compare=False, repr=False)


def contribute(agent: str, part: Part, reply: str, teammates: Collection[str]) -> Contribution:
    """The contribution of ``agent``'s ``reply`` to ``part``; ``teammates`` are the other parts' names."""
    code = extract_code(reply, part.name)
    if code is None:
        return Contribution(agent, part.name, "", parses=False, defined=False)
    # One newline convention, so that list indices match the syntax tree's line numbers.
    code, tree = _as_definition(code.replace("\r\n", "\n").replace("\r", "\n"), part)
    if tree is None:
        return Contribution(agent, part.name, code, parses=False, defined=False)
    lines = code.split("\n")
    dropped: set[str] = set()
    kept_statements = []
    watched = {name for name in teammates if name in code}  # a name never written is never bound
    for statement in reversed(tree.body):
        trespass = set(module_bindings(statement)) & watched if watched else set()
        if trespass:
            dropped |= trespass
            del lines[first_line(statement) - 1 : statement.end_lineno or statement.lineno]
        else:
            kept_statements.append(statement)
    # Whole top-level statements were cut, so what is left parses as the statements kept.
    defined = part.name in code and any(binds_any(statement, (part.name,)) for statement in kept_statements)
    return Contribution(
        agent,
        part.name,
        "\n".join(lines),
        parses=True,
        defined=defined,
        dropped=tuple(sorted(dropped)),
        tree=ast.Module(body=kept_statements[::-1], type_ignores=[]),
    )


@dataclass(frozen=True)
class Assembly:
    """The team's program.

    Attributes:
        source: the program's text.
        spans: ``(agent, first line, last line)`` of each agent's code in ``source`` (1-based).
    """

    source: str
    spans: tuple[tuple[str, int, int], ...]

    def author(self, line: int | None) -> str | None:
        """The agent whose code holds ``line``, or None (the task's context, comments, unknown)."""
        if line is None:
            return None
        return next((agent for agent, first, last in self.spans if first <= line <= last), None)


def assemble(context: str, contributions: Sequence[Contribution]) -> Assembly:
    """The program: ``context``, then each contribution under a comment naming its author."""
    lines: list[str] = [*context.rstrip("\n").split("\n"), ""] if context.strip() else []
    spans = []
    for contribution in contributions:
        body = contribution.code.rstrip("\n").split("\n") if contribution.code.strip() else []
        if not body:
            continue
        lines.append(f"# {contribution.agent} writes {contribution.part}")
        spans.append((contribution.agent, len(lines) + 1, len(lines) + len(body)))
        lines.extend(body)
        lines.append("")
    return Assembly("\n".join(lines).rstrip("\n") + "\n", tuple(spans))


def _as_definition(code: str, part: Part) -> tuple[str, ast.Module | None]:
    """``code`` and its tree, or the part's stub completed by ``code`` when it is a bare function body:
    it binds no part name and defines no function or class."""
    tree = parse(code)
    if not part.stub.strip():
        return code, tree
    named = part.name in code
    if tree is not None and any(
        isinstance(statement, _DEFINITIONS) or (named and binds_any(statement, (part.name,)))
        for statement in tree.body
    ):
        return code, tree
    stub = part.stub if part.stub.endswith("\n") else part.stub + "\n"
    completed = stub + textwrap.indent(textwrap.dedent(code), "    ", lambda line: bool(line.strip()))
    completed_tree = parse(completed)
    return (completed, completed_tree) if completed_tree is not None else (code, tree)
