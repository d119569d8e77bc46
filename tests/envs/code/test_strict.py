"""The strict checks of the tests' comparisons, truths and arithmetic, and the rewriting that routes them.

These run in this process, on the harness's functions and on rewritten test code; the replies that
try the same tricks in the sandbox are in ``test_attacks.py``.
"""

from __future__ import annotations

import builtins
import collections
import enum
import fractions
import re
import types
from typing import Any

import pytest

from mrlm.envs.code import _harness
from mrlm.envs.code.asserts import explained
from mrlm.envs.code.strict import strict_code


@pytest.fixture(scope="module")
def checks() -> types.SimpleNamespace:
    return _harness._strict_checks(dict(builtins.__dict__))


def run(code: str, checks: types.SimpleNamespace, **names: Any) -> dict[str, Any]:
    """Rewrite ``code``, compile it and pin the checks as the harness does, and run it."""
    compiled = _harness._pinned(compile(strict_code(code), "<test>", "exec"), checks)
    namespace = dict(names)
    exec(compiled, namespace)  # test code written here
    return namespace


# Objects a solution could return to pass tests without computing anything.


class AlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0


class LyingStr(str):
    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class LyingInt(int):
    def __eq__(self, other: object) -> bool:
        return True

    def __bool__(self) -> bool:
        return True

    def __sub__(self, other: object) -> int:
        return 0

    __hash__ = int.__hash__


class LyingList(list):
    def __eq__(self, other: object) -> bool:
        return True

    def __len__(self) -> int:
        return 3

    def __contains__(self, item: object) -> bool:
        return True


class LyingFloat(float):
    def __sub__(self, other: object) -> float:
        return 0.0

    def __lt__(self, other: object) -> bool:
        return True


class Truthy:
    def __bool__(self) -> bool:
        return True


class Long:
    def __len__(self) -> int:
        return 1


class Anything:
    """Claims everything: equal, contained, a zero difference, and whichever order is asked."""

    def __eq__(self, other: object) -> bool:
        return True

    def __contains__(self, item: object) -> bool:
        return True

    def __iter__(self) -> Any:
        return iter(())

    def __sub__(self, other: object) -> int:
        return 0

    __rsub__ = __sub__

    def __lt__(self, other: object) -> bool:
        return False

    __gt__ = __le__ = __ge__ = __lt__
    __hash__ = object.__hash__


class Point:
    """A class of the tests' own, compared as its ``__eq__`` says."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


class Color(enum.IntEnum):
    RED = 1


Pair = collections.namedtuple("Pair", "a b")


def _cyclic() -> list[Any]:
    loop: list[Any] = [1]
    loop.append(loop)
    return loop


def _nested(depth: int) -> list[Any]:
    value: list[Any] = [7]
    for _ in range(depth):
        value = [value]
    return value


EQUAL = {
    "ints": (3, 3),
    "int and float": (2, 2.0),
    "bool and int": (True, 1),
    "nested": ([1, (2, "a"), {"k": {1.0}}], [1.0, (2, "a"), {"k": {1}}]),
    "Counter and dict": (collections.Counter("aab"), {"a": 2, "b": 1}),
    "defaultdict and dict": (collections.defaultdict(list, {1: [2]}), {1: [2]}),
    "OrderedDict and dict": (collections.OrderedDict(a=1), {"a": 1}),
    "namedtuples and tuples": ([Pair(1, 2)], [(1, 2)]),
    "IntEnum and int": (Color.RED, 1),
    "str subclass holding the value": (LyingStr("abc"), "abc"),
    "dict keys and a set": ({"a": 1, "b": 2}.keys(), {"a", "b"}),
    "ranges": (range(3), range(0, 3)),
    "objects of the tests' own type": (Point(1, 2), Point(1, 2)),
    "Fractions": (fractions.Fraction(1, 2), fractions.Fraction(2, 4)),
    "shared structure": ([[0] * 2] * 2, [[0, 0], [0, 0]]),
    "deeply nested": (_nested(150), _nested(150)),
}
UNEQUAL = {
    "always equal object": (AlwaysEqual(), "A"),
    "always equal on the right": ("A", AlwaysEqual()),
    "str subclass": (LyingStr("nope"), "A"),
    "int subclass": (LyingInt(-1), 7),
    "list subclass": (LyingList(), [1, 2]),
    "list of always equal objects": ([AlwaysEqual(), AlwaysEqual()], [1, 2]),
    "dict with an always equal value": ({"a": AlwaysEqual()}, {"a": 1}),
    "dict with an always equal key": ({AlwaysEqual(): 1}, {"a": 1}),
    "set of always equal objects": ({AlwaysEqual()}, {1}),
    "tuple holding a lying str": ((LyingStr("x"),), ("y",)),
    "a cycle": (_cyclic(), [1, [1, [1]]]),
    "two cycles": (_cyclic(), _cyclic()),
    "too deeply nested": (_nested(3000), _nested(3000)),
    "too deeply nested with a subclass": ([_nested(150), LyingStr("a")], [_nested(150), "a"]),
    "an object of another type and a plain value": (Point(1, 2), (1, 2)),
    "float and Fraction": (0.5, fractions.Fraction(1, 2)),
}


@pytest.mark.parametrize(("left", "right"), EQUAL.values(), ids=EQUAL.keys())
def test_equal_values_are_equal(checks: Any, left: object, right: object) -> None:
    assert checks.eq(left, right) is True
    assert checks.ne(left, right) is False


@pytest.mark.parametrize(("left", "right"), UNEQUAL.values(), ids=UNEQUAL.keys())
def test_values_that_only_claim_equality_are_unequal(checks: Any, left: object, right: object) -> None:
    assert checks.eq(left, right) is False
    assert checks.ne(left, right) is True


def test_two_objects_of_other_types_are_compared_as_they_say(checks: Any) -> None:
    # The fallback the defence cannot close: neither side is a built-in value.
    assert checks.eq(AlwaysEqual(), Point(1, 2)) is True
    assert checks.eq(Point(1, 2), Point(2, 1)) is False


def test_orderings(checks: Any) -> None:
    assert checks.lt(1, 2.5) and checks.ge("b", "a") and checks.le([1, 2], [1, 2])
    assert checks.lt(LyingFloat(3.0), 2.0) is False  # read as the float it holds
    assert checks.gt(fractions.Fraction(1, 2), fractions.Fraction(1, 3)) is True
    with pytest.raises(TypeError, match="object of another type"):
        checks.gt(Anything(), 0)
    with pytest.raises(ValueError, match="NaN"):
        checks.gt(float("nan"), 1e-9)
    with pytest.raises(TypeError):
        checks.lt(1, "a")  # as Python itself says


def test_membership(checks: Any) -> None:
    assert checks.is_in(2, [1, 2.0]) and checks.is_in("b", "abc") and checks.is_in(1, {1: "x"})
    assert checks.is_in(4, range(10)) and checks.is_in(2, {"a": 2}.values())
    assert checks.not_in(3, [1, 2]) is True
    assert checks.is_in(AlwaysEqual(), [1, 2]) is False
    assert checks.is_in(3, [AlwaysEqual()]) is False
    # A container of another type is iterated, and its members compared strictly.
    assert checks.is_in(3, Anything()) is False
    assert checks.is_in(3, LyingList([1])) is False
    assert checks.is_in(3, collections.deque([1, 3])) is True
    assert checks.is_in(Point(1, 2), [Point(0, 0), Point(1, 2)]) is True
    with pytest.raises(TypeError):
        checks.is_in(1, "abc")  # as Python itself says


def test_truth(checks: Any) -> None:
    assert checks.truth(True) is True and checks.truth([]) is False and checks.truth(set()) is False
    assert checks.truth(LyingInt(0)) is False  # read as the int it holds
    assert checks.truth(LyingList()) is False  # its real length
    assert checks.truth(re.match("a", "a")) is True
    for liar in (Truthy(), Long(), AlwaysEqual()):
        with pytest.raises(TypeError, match="not of a built-in type"):
            checks.truth(liar)


def test_arithmetic(checks: Any) -> None:
    assert checks.arith("-", 3, 0.5) == 2.5 and checks.arith("+", [1], [2]) == [1, 2]
    assert checks.arith("-", LyingFloat(3.0), 1.0) == 2.0  # the float it holds, not its __sub__
    assert checks.arith("-", 2.25, LyingInt(1)) == 1.25
    assert checks.arith("%", "%s!", Point(1, 2)).endswith("!")
    assert checks.arith("-", fractions.Fraction(1, 2), fractions.Fraction(1, 3)) == fractions.Fraction(1, 6)
    with pytest.raises(TypeError, match="object of another type"):
        checks.arith("-", Anything(), 2.25)
    with pytest.raises(TypeError, match="object of another type"):
        checks.arith("-", 2.25, Anything())


def test_the_checks_ignore_patches_of_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    # Patching the builtins themselves is tried in the sandbox (test_attacks.py).
    checks = _harness._strict_checks(dict(builtins.__dict__))
    for name in list(vars(_harness)):
        if name.startswith("_") and not name.startswith("__"):
            monkeypatch.setattr(_harness, name, lambda *args, **kwargs: True)
    assert checks.eq(AlwaysEqual(), "A") is False
    assert checks.is_in(3, Anything()) is False


def test_pinned_replaces_the_constant_in_nested_code() -> None:
    marker = object()
    code = compile(f"def f():\n    return [{_harness.STRICT_CONSTANT!r} for _ in (1,)]\n", "<t>", "exec")
    namespace: dict[str, Any] = {}
    exec(_harness._pinned(code, marker), namespace)  # test code written here
    assert namespace["f"]() == [marker]


# The rewriting of test code.


def test_comparisons_arithmetic_and_asserts_are_routed() -> None:
    rewritten = strict_code(
        "assert abs(f(x) - 0.5) < 1e-6\nassert f(1) != g(2)\nassert 3 in f(4)\nassert f(5)"
    )
    assert rewritten.count(_harness.STRICT_CONSTANT) == 5
    for check in (".lt(", ".arith('-',", ".ne(", ".is_in(", ".truth("):
        assert check in rewritten


def test_identities_and_constants_are_left_alone() -> None:
    code = "assert f(x) is None\nassert 2 ** 10 == 1024"
    assert strict_code(code) == code


def test_code_that_does_not_compile_is_left_alone() -> None:
    assert strict_code("assert f(x) ==") == "assert f(x) =="


def test_a_chain_evaluates_each_operand_once_and_stops_early(checks: Any) -> None:
    calls: list[int] = []

    def seen(value: int) -> int:
        calls.append(value)
        return value

    run("assert not (seen(1) < seen(0) < seen(2))\nassert seen(0) <= seen(1) < seen(2)", checks, seen=seen)
    assert calls == [1, 0, 0, 1, 2]


def test_a_chain_where_no_temporary_fits_stays_a_chain(checks: Any) -> None:
    code = "class Box:\n    small = [n for n in range(5) if 1 < n < 3]\nassert Box.small == [2]"
    assert "1 < n < 3" in strict_code(code)
    run(code, checks)


def test_asserted_values_must_be_built_in(checks: Any) -> None:
    run("assert f(1) and not f(0)\nassert all(f(n) for n in (1, 2))", checks, f=bool)
    for liar in (Truthy, Long):
        with pytest.raises(TypeError):
            run("assert f(1)", checks, f=lambda value, liar=liar: liar())
        with pytest.raises(TypeError):
            run("assert all(f(n) for n in (1, 2))", checks, f=lambda value, liar=liar: liar())


def test_failed_equalities_still_say_what_they_got(checks: Any) -> None:
    with pytest.raises(AssertionError, match="got 'B', expected 'A'"):
        run(explained("assert grade(90) == 'A'"), checks, grade=lambda score: "B")
    with pytest.raises(AssertionError, match="expected 'A'"):
        run(explained("assert grade(90) == 'A'"), checks, grade=lambda score: AlwaysEqual())
