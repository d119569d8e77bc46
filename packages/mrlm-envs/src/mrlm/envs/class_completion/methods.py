"""The methods an agent's reply writes. Text and syntax trees only: nothing of the reply runs here.

The code is every Python block of the reply (models often write one block per method), or the whole
reply when it has no fence; a block that does not parse is skipped. Methods are the functions each
block defines at top level and inside the class (inside any class, when none has the task's name);
a method defined twice keeps its last definition. Only top-level imports are kept
besides them; other top-level code is ignored. A method counts as implemented when its body, past
the docstring, does more than ``pass``, ``...``, ``return None`` or ``raise NotImplementedError``:
echoing the skeleton's stubs, or stubs of one's own, implements nothing.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from mrlm.envs.class_completion.source import at_column_zero, parse
from mrlm.envs.code.extract import PYTHON_LABELS, fenced_blocks

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Written:
    """One method definition of a reply.

    Attributes:
        name: the method's name.
        code: its source at column 0, decorators included.
        implemented: its body does some work (it is not a stub).
    """

    name: str
    code: str
    implemented: bool


@dataclass(frozen=True)
class ReplyCode:
    """What a reply offers the class.

    Attributes:
        methods: the methods it defines, in order; a name defined twice keeps its last definition.
        imports: its top-level import statements, as source.
        has_code: the reply holds code.
        parses: the code is valid Python syntax.
    """

    methods: tuple[Written, ...] = ()
    imports: tuple[str, ...] = ()
    has_code: bool = False
    parses: bool = False

    @property
    def implemented(self) -> tuple[Written, ...]:
        return tuple(method for method in self.methods if method.implemented)


def read_reply(reply: str, class_name: str) -> ReplyCode:
    """The methods and imports of ``reply`` for the class ``class_name``."""
    blocks = code_blocks(reply)
    written: dict[str, Written] = {}
    imports: list[str] = []
    parses = True
    for code in blocks:
        code = code.replace("\r\n", "\n").replace("\r", "\n")  # line numbers then match list indices
        tree = parse(code)
        if tree is None:
            parses = False
            continue
        lines = code.split("\n")
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        members = [node for node in classes if node.name == class_name] or classes
        functions = [node for node in tree.body if isinstance(node, _FUNCTIONS)]
        functions += [node for cls in members for node in cls.body if isinstance(node, _FUNCTIONS)]
        for node in sorted(functions, key=lambda node: node.lineno):
            written.pop(node.name, None)  # the later definition stands, in its own place in the order
            written[node.name] = Written(node.name, at_column_zero(lines, node), _implemented(node))
        imports += [
            at_column_zero(lines, node)
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
    return ReplyCode(
        tuple(written.values()), tuple(imports), has_code=bool(blocks), parses=bool(blocks) and parses
    )


def code_blocks(reply: str) -> list[str]:
    """The code of a reply: every Python (or unlabelled) fenced block, in order, else the blocks with
    any label, else the whole reply when it has no fence. Reasoning before ``</think>`` is skipped."""
    if "</think>" in reply:
        reply = reply.rsplit("</think>", 1)[1]
    blocks = [(label, code) for label, code in fenced_blocks(reply) if code.strip()]
    if blocks:
        python = [code for label, code in blocks if label in PYTHON_LABELS]
        return [textwrap.dedent(code) for code in python or [code for _, code in blocks]]
    if "```" in reply or not reply.strip():
        return []
    return [textwrap.dedent(reply)]


def _implemented(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return any(not _placeholder(statement) for statement in body)


def _placeholder(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Return) and (
        statement.value is None
        or (isinstance(statement.value, ast.Constant) and statement.value.value is None)
    ):
        return True  # ``return`` or ``return None``: a stub that claims the method and does nothing
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True  # ``...`` or a stray string
    if isinstance(statement, ast.Raise):
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False
