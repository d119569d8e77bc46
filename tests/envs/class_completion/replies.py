"""Scripted replies for the built-in class ``Inventory`` (``mrlm-class/0``).

Its ten tests: add_item 2, remove_item 3, quantity 2, most_stocked 2, and one using them together.
With seed 1 the env deals ``add_item`` and ``quantity`` to agent_0, ``remove_item`` and
``most_stocked`` to agent_1 (the tests check this deal first).
"""

from __future__ import annotations

from collections.abc import Iterable

from mrlm.envs.class_completion import builtin_classes

TASK = {"task_id": "mrlm-class/0"}
SEED = 1
INVENTORY = builtin_classes()[0]
SOLUTIONS = {method.name: method.solution or "" for method in INVENTORY.methods}
DEAL = {"agent_0": ["add_item", "quantity"], "agent_1": ["remove_item", "most_stocked"]}
WRONG = {name: f"def {name}(self, *args):\n    return 'wrong'\n" for name in SOLUTIONS}


def methods(names: Iterable[str], source: dict[str, str] = SOLUTIONS) -> str:
    """A reply with the given methods as top-level definitions in a python block."""
    return "Here are my methods.\n\n```python\n" + "\n\n".join(source[name] for name in names) + "\n```\n"


def whole_class(names: Iterable[str]) -> str:
    """A reply that echoes the skeleton with only ``names`` filled in, as models often answer."""
    chosen = set(names)
    body = "\n\n".join(
        SOLUTIONS[method.name] if method.name in chosen else method.stub for method in INVENTORY.methods
    )
    indented = "\n".join("    " + line if line.strip() else line for line in body.split("\n"))
    return (
        f"```python\nclass Inventory:\n    def __init__(self):\n        self.stock = {{}}\n\n{indented}\n```"
    )
