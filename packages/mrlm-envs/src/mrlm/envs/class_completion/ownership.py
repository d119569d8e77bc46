"""Who writes which method, and what happens when an agent writes a method it does not own.

Two ways to split the work (``assignment``):

- ``"env"``: at reset the methods are shuffled by the seed and dealt round-robin, so every agent owns
  as many as any other, give or take one. An agent may implement its own methods only.
- ``"agents"``: nobody owns anything at reset; the agents split the work by what they write. A
  method belongs to the first agent that implements it: earlier rounds first and, within a round, the
  agent that comes first in the agents' order. Ownership then stays for the episode.

In both, an implemented method of a teammate is an overwrite: it is dropped, the owner's version
stays, and the writer pays a penalty. A stub (a copy of the skeleton's) is not an implementation and
is simply ignored, so an agent may send the whole class with only its own methods filled in.
Methods outside the skeleton (private helpers) are claimed as in ``"agents"`` in both modes. The
constructor is given and cannot be replaced.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mrlm.envs.class_completion.methods import ReplyCode

Assignment = Literal["env", "agents"]
ASSIGNMENTS: tuple[Assignment, ...] = ("env", "agents")


def deal(methods: Sequence[str], agents: Sequence[str], rng: np.random.Generator) -> dict[str, str]:
    """``"env"`` assignment: the methods shuffled by ``rng`` and dealt round-robin to ``agents``."""
    order = rng.permutation(len(methods))
    return {methods[int(index)]: agents[turn % len(agents)] for turn, index in enumerate(order)}


@dataclass
class Ledger:
    """The class being written: who owns each method and the code that stands for it.

    Attributes:
        owners: method -> owning agent (methods not yet claimed are absent).
        code: method -> ``(agent, source at column 0)`` of the implementations that stand.
        imports: the imports of every reply so far, in order, without repeats.
    """

    owners: dict[str, str] = field(default_factory=dict)
    code: dict[str, tuple[str, str]] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Round:
    """What one round's replies changed.

    Attributes:
        accepted: agent -> methods whose implementation it placed this round.
        overwrites: agent -> teammates' methods it implemented (dropped).
        refused: agent -> methods dropped as written: the constructor (the task gives it), and methods
            whose definition binds other names of the class.
    """

    accepted: Mapping[str, tuple[str, ...]]
    overwrites: Mapping[str, tuple[str, ...]]
    refused: Mapping[str, tuple[str, ...]]


#: Methods of the skeleton that stay as given.
FIXED = frozenset({"__init__"})


def other_bindings(code: str, name: str) -> set[str]:
    """The names other than ``name`` that defining ``code`` (a method at column 0) binds in the
    class: assignment expressions (``:=``) in its decorators, defaults and annotations run in the
    class body and bind there."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # the assembly reports code that does not parse
    bound: set[str] = set()
    for statement in tree.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = statement.args
        evaluated: list[ast.AST | None] = [
            *statement.decorator_list,
            *arguments.defaults,
            *arguments.kw_defaults,
            statement.returns,
            *(arg.annotation for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)),
            arguments.vararg.annotation if arguments.vararg else None,
            arguments.kwarg.annotation if arguments.kwarg else None,
        ]
        for part in evaluated:
            if part is None:
                continue
            for node in ast.walk(part):
                if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                    bound.add(node.target.id)
    return bound - {name}


def apply_round(ledger: Ledger, replies: Mapping[str, ReplyCode], agents: Sequence[str]) -> Round:
    """Place the implementations of one round's ``replies`` into ``ledger``, agents in order."""
    accepted: dict[str, list[str]] = {agent: [] for agent in agents}
    overwrites: dict[str, list[str]] = {agent: [] for agent in agents}
    refused: dict[str, list[str]] = {agent: [] for agent in agents}
    for agent in agents:
        reply = replies[agent]
        for line in reply.imports:
            if line not in ledger.imports:
                ledger.imports.append(line)
        for method in reply.implemented:
            if method.name in FIXED:
                refused[agent].append(method.name)
                continue
            others = sorted(other_bindings(method.code, method.name))
            if others:
                # Its decorators or defaults would rebind other names of the class, where no
                # ownership is checked: it is dropped, and rebinding a teammate's method overwrites it.
                refused[agent].append(method.name)
                taken = [name for name in others if ledger.owners.get(name, agent) != agent]
                overwrites[agent].extend(name for name in taken if name not in overwrites[agent])
                continue
            owner = ledger.owners.setdefault(method.name, agent)
            if owner != agent:
                overwrites[agent].append(method.name)
                continue
            ledger.code[method.name] = (agent, method.code)
            accepted[agent].append(method.name)
    return Round(
        accepted={agent: tuple(names) for agent, names in accepted.items()},
        overwrites={agent: tuple(names) for agent, names in overwrites.items()},
        refused={agent: tuple(names) for agent, names in refused.items()},
    )
