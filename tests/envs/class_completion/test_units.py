"""Reading replies, dealing and claiming methods, and the balance score, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from mrlm.envs.class_completion import Ledger, apply_round, balance, deal, read_reply
from mrlm.envs.class_completion.methods import ReplyCode
from mrlm.envs.class_completion.ownership import other_bindings


def test_methods_come_from_top_level_and_the_class_of_every_block() -> None:
    reply = (
        "<think>```python\ndef hidden(self): return 1\n```</think>First:\n```python\nimport math\n\n"
        "class Box:\n    def a(self):\n        return math.pi\n\n    def b(self):\n"
        '        """Only a docstring."""\n```\nThen:\n```py\n@property\ndef c(self):\n    return 3\n\n'
        "def a(self):\n    raise NotImplementedError\n```\n```python\ndef broken(:\n```"
    )
    code = read_reply(reply, "Box")
    assert [(m.name, m.implemented) for m in code.methods] == [("b", False), ("c", True), ("a", False)]
    assert code.methods[1].code == "@property\ndef c(self):\n    return 3"
    assert code.imports == ("import math",) and code.has_code and not code.parses
    assert [m.name for m in code.implemented] == ["c"]


@pytest.mark.parametrize(
    ("body", "implemented"),
    [("return None", False), ("return", False), ("pass\n    return None", False), ("return 0", True)],
)
def test_a_body_that_only_returns_none_implements_nothing(body: str, implemented: bool) -> None:
    # Counted as work, such stubs earned coverage and balance and dodged the idle penalty.
    (method,) = read_reply(f"def a(self):\n    {body}\n", "Box").methods
    assert method.implemented is implemented


def test_methods_move_to_column_zero_without_touching_less_indented_string_lines() -> None:
    reply = 'class Box:\n    def text(self):\n        return """first\nsecond"""\n'
    (method,) = read_reply(reply, "Box").methods
    assert method.code == 'def text(self):\n    return """first\nsecond"""'


def test_replies_without_code() -> None:
    assert read_reply("", "Box") == ReplyCode()
    prose = read_reply("I would write it like this: loop and add.", "Box")
    assert (prose.has_code, prose.parses, prose.methods) == (True, False, ())


def test_deal_is_balanced_and_follows_the_seed() -> None:
    names = ["a", "b", "c", "d", "e"]
    owners = deal(names, ["x", "y"], np.random.default_rng(3))
    assert sorted(owners) == names and sorted(list(owners.values()).count(agent) for agent in "xy") == [2, 3]
    assert owners == deal(names, ["x", "y"], np.random.default_rng(3))
    assert (
        len({tuple(deal(names, ["x", "y"], np.random.default_rng(seed)).items()) for seed in range(10)}) > 1
    )


def _reply(*names: str, body: str = "return 1") -> ReplyCode:
    return read_reply("\n\n".join(f"def {name}(self):\n    {body}\n" for name in names), "Box")


def test_claims_go_to_the_first_implementation_and_stay() -> None:
    ledger = Ledger()
    changes = apply_round(ledger, {"x": _reply("a", "b"), "y": _reply("b", "c", "__init__")}, ["x", "y"])
    assert ledger.owners == {"a": "x", "b": "x", "c": "y"}
    assert changes.accepted == {"x": ("a", "b"), "y": ("c",)}
    assert changes.overwrites == {"x": (), "y": ("b",)} and changes.refused == {"x": (), "y": ("__init__",)}
    # Later rounds: owners replace their own code; a stub neither claims nor overwrites.
    changes = apply_round(
        ledger, {"x": _reply("c", "d", body="pass"), "y": _reply("c", body="return 2")}, ["x", "y"]
    )
    assert changes.overwrites == {"x": (), "y": ()} and "d" not in ledger.owners
    assert ledger.code["c"] == ("y", "def c(self):\n    return 2")


def test_dealt_methods_cannot_be_taken() -> None:
    ledger = Ledger(owners={"a": "x", "b": "y"})
    changes = apply_round(ledger, {"x": _reply("a", "b"), "y": ReplyCode()}, ["x", "y"])
    assert changes.overwrites["x"] == ("b",) and set(ledger.code) == {"a"}


@pytest.mark.parametrize(
    "helper",
    [
        # Run in the class body when the method is defined: each would rebind the teammate's `b`.
        "@[(b := lambda self: 2), (lambda f: f)][-1]\ndef _setup(self):\n    return 0\n",
        "def _setup(self, _=(b := lambda self: 2)):\n    return 0\n",
        "def _setup(self, *, _=(b := 2)) -> (c := int):\n    return 0\n",
    ],
)
def test_a_method_whose_definition_rebinds_a_teammates_method_overwrites_it(helper: str) -> None:
    ledger = Ledger(owners={"a": "x", "b": "y"})
    reply = read_reply(f"def a(self):\n    return 1\n\n{helper}", "Box")
    changes = apply_round(ledger, {"x": reply, "y": _reply("b")}, ["x", "y"])
    assert changes.overwrites["x"] == ("b",)  # the overwrite penalty is paid for the teammate's method
    assert set(ledger.code) == {"a", "b"} and ledger.code["b"][0] == "y"  # and the helper is not placed
    assert changes.accepted["x"] == ("a",) and changes.refused["x"] == ("_setup",)


def test_a_method_rebinding_only_its_writers_own_names_is_dropped_without_a_penalty() -> None:
    ledger = Ledger(owners={"a": "x", "b": "y"})
    helper = "def _setup(self, _=(a := lambda self: 2), __=(_cache := {})):\n    return 0\n"
    changes = apply_round(ledger, {"x": read_reply(helper, "Box"), "y": _reply("b")}, ["x", "y"])
    assert changes.overwrites["x"] == () and changes.refused["x"] == ("_setup",)
    assert "_setup" not in ledger.code


def test_names_a_definition_binds_besides_its_own() -> None:
    assert other_bindings("def f(self, k=(g := 3)):\n    return k\n", "f") == {"g"}
    assert other_bindings("@cache\ndef f(self, k=3):\n    y = (z := 2)\n    return y\n", "f") == set()
    assert other_bindings("def f(self:\n", "f") == set()  # does not parse: the assembly says so


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ([2, 2], 1.0),
        ([3, 2], 1.0),  # five methods cannot be split more evenly
        ([3, 1], 0.5),  # one of the two methods above the even share of 2 would have to move
        ([4, 0], 0.0),
        ([1, 0], 1.0),  # a single method cannot be shared
        ([0, 0], 0.0),
        ([2, 1, 1], 1.0),
        ([4, 1, 1], 1 - 2 / 4),  # even share 2: two methods too many, out of at most 6 - 2
        ([6, 0, 0], 0.0),
    ],
)
def test_balance(counts: list[int], expected: float) -> None:
    assert balance(counts) == pytest.approx(expected, abs=1e-12)
