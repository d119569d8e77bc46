"""Arguments a test builds from constants alone cross as their expressions (see
mrlm.envs.code._harness.compile_tests): the solution's process builds them, with the same values
as the tests would, and nothing of the solution is ever evaluated by the judge."""

from __future__ import annotations

import ast

import pytest

from mrlm.envs.code import _harness
from mrlm.envs.sandbox import Sandbox
from tests.envs.code.replies import judged_errors


def _built(test: str, *, setup: str = "", entry_point: str = "f") -> list[str]:
    """The expressions of the arguments that the step ``test`` would send to be built."""
    trees = [ast.parse(setup), ast.parse(test)]
    builders = _harness._unbound_builders(trees, entry_point)
    rewritten = _harness._BuiltArguments(builders).visit(trees[1]) if builders else trees[1]
    return [
        ast.literal_eval(node.args[0])
        for node in ast.walk(rewritten)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == _harness._BUILT
    ]


def _rewritten(test: str, *, setup: str = "", entry_point: str = "f") -> bool:
    """Whether the step ``test`` as compiled calls through the judge's helper for built arguments."""
    codes = _harness.compile_tests(setup, [test], entry_point)

    def names(code: object) -> set[str]:
        found = set(code.co_names)  # type: ignore[attr-defined]
        for constant in code.co_consts:  # type: ignore[attr-defined]
            if hasattr(constant, "co_names"):
                found |= names(constant)
        return found

    return _harness._CALL_WITH_BUILT in names(codes[1])


def test_built_arguments_arrive_as_the_tests_would_have_built_them(sandbox: Sandbox) -> None:
    solution = (
        "def shape(values=None, *, other=None):\n"
        "    values = other if values is None else values\n"
        "    return type(values).__name__, len(values), list(values)[:3], list(values)[-1]\n"
    )
    cases = {
        "list(range(0, 10**6, 2))": "('list', 500000, [0, 2, 4], 999998)",
        "[7] * 1000": "('list', 1000, [7, 7, 7], 7)",
        "[1] * 62 + [True]": "('list', 63, [1, 1, 1], True)",
        "tuple(range(-5, 5))": "('tuple', 10, [-5, -4, -3], 4)",
        "list(reversed(range(4)))": "('list', 4, [3, 2, 1], 0)",
        "'ab' * 3": "('str', 6, ['a', 'b', 'a'], 'b')",
        "[0.5, -1.5] * 50": "('list', 100, [0.5, -1.5, 0.5], -1.5)",
        "[(1, 'a')] * 2 + list(range(2)) * 2": "('list', 6, [(1, 'a'), (1, 'a'), 0], 1)",
    }
    tests = [f"assert shape({value}) == {expected}" for value, expected in cases.items()]
    tests += ["assert shape(other=list(range(5))) == ('list', 5, [0, 1, 2], 4)"]
    assert all(_rewritten(test, entry_point="shape") for test in tests)
    errors = judged_errors(sandbox, "shape", solution, *tests)
    assert errors == [None] * len(tests), [
        (test, error) for test, error in zip(tests, errors, strict=True) if error
    ]


def test_calls_to_the_tests_own_functions_get_the_built_value(sandbox: Sandbox) -> None:
    solution = "def total(values):\n    return sum(values)\n"
    setup = "def twice(function, values):\n    assert type(values) is list\n    return 2 * function(values)\n"
    tests = (
        "assert len(list(range(10))) == 10 and sum([1] * 5) == 5",
        "assert twice(total, list(range(101))) == 10100",
        "assert max(tuple([2, 9, 4] * 3)) == 9",
    )
    assert all(_rewritten(test, setup=setup, entry_point="total") for test in tests)
    assert judged_errors(sandbox, "total", solution, *tests, setup=setup) == [None] * 3


def test_a_solution_that_changes_a_built_argument_in_place_is_judged_on_its_result(sandbox: Sandbox) -> None:
    solution = "def grow(values):\n    values.append(len(values))\n    values.sort(reverse=True)\n    return values[0]\n"
    tests = (
        "assert grow(list(range(100))) == 100",
        "assert grow([5] * 64) == 64",
        # Named first, the list is the tests' own value: it crosses as data and comes back changed.
        "values = list(range(100))\nassert grow(values) == 100 and values[:2] == [100, 99] and len(values) == 101",
    )
    assert not _rewritten(tests[2], entry_point="grow")
    assert judged_errors(sandbox, "grow", solution, *tests) == [None, None, None]


def test_a_wrong_solution_still_fails_on_a_built_argument(sandbox: Sandbox) -> None:
    linear_wrong = (
        "def leftmost_index(items, target):\n    return items.index(target) + 1 if target in items else -1\n"
    )
    tests = ("assert leftmost_index(list(range(0, 10**6, 2)), 999998) == 499999",)
    (error,) = judged_errors(sandbox, "leftmost_index", linear_wrong, *tests)
    assert error is not None and "500000" in error, error


@pytest.mark.parametrize(
    ("setup", "test", "entry_point", "built"),
    [
        ("", "assert f(list(range(5)), [0] * 9) == 1", "f", ["list(range(5))", "[0] * 9"]),
        ("range = lambda *args: [1]\n", "assert f(list(range(5))) == 1", "f", []),  # the setup rebinds range
        # A parameter named list: only what the builtins build goes.
        ("", "def g(list):\n    return f(list(range(3)))\nassert g(tuple) == 1", "f", ["range(3)"]),
        ("", "assert tuple(tuple([2, 1])) == [2, 1]", "tuple", []),  # the entry point is a builder's name
        ("", "assert f(sorted([2, 1]), set([1, 1])) == 1", "f", []),  # they drop or reorder what they get
        ("", "assert f(list({3, 1, 1})) == 1", "f", []),  # so does a set display
        ("from math import *\n", "assert f(list(range(3))) == 1", "f", []),  # import * could bind anything
        ("", "globals()['range'] = len\nassert f(list(range(3))) == 1", "f", []),  # rebinds unseen
        ("import builtins\n", "assert f(list(range(3))) == 1", "f", []),
        ("", "assert f(*[list(range(3))]) == 1", "f", []),  # starred: left as written
        ("", "values = list(range(3))\nassert f(values) == 1", "f", []),  # named: the tests' own value
        ("", "assert f([1, 2, 3], 4 * 5) == 1", "f", []),  # constants that take no building
        ("", "assert f(list(map(abs, [1]))) == 1", "f", []),  # map is not a builder
        ("", "assert f([i for i in range(3)]) == 1", "f", []),  # a comprehension has names of its own
        # One list thrice, where the value crosses as three lists: sent as the value, as ever.
        ("", "assert f([[0] * 2] * 3, [[1]] * 2, list([[1]]) * 2) == 1", "f", []),
        ("", "assert f([(1, [2])] * 2) == 1", "f", []),
        # Annotations stay as written (text under the tests' future import).
        ("", "def g(a: str(list(range(3)))) -> str([0] * 2):\n    pass", "f", []),
        ("", "x: str(list(range(3))) = f([0] * 2)", "f", ["[0] * 2"]),
    ],
)
def test_only_arguments_that_build_the_same_value_there_are_sent_to_be_built(
    setup: str, test: str, entry_point: str, built: list[str]
) -> None:
    assert _built(test, setup=setup, entry_point=entry_point) == built
    assert _rewritten(test, setup=setup, entry_point=entry_point) == bool(built)


def test_the_judge_never_builds_an_expression_the_solution_sends() -> None:
    # The judge reads the solution's messages as untrusted: a "built" value from there is refused
    # as malformed, never evaluated.
    resolve_calls: list[object] = []

    def resolve(tag: str, data: object) -> object:
        resolve_calls.append(tag)
        raise ValueError("a malformed reference")

    hostile = {"$": "built", "v": "__import__('os').system('touch /tmp/mrlm-built-pwned')"}
    with pytest.raises(ValueError, match="malformed reference"):
        _harness._decode(hostile, _harness._In(resolve, [], from_trusted=False))
    # From the judge, read by the solution's process, it is built (at the top level only).
    trusted = _harness._In(resolve, [], from_trusted=True)
    assert _harness._decode({"$": "built", "v": "list(range(3))"}, trusted) == [0, 1, 2]
    with pytest.raises(ValueError, match="malformed reference"):
        _harness._decode(
            [{"$": "built", "v": "list(range(3))"}], _harness._In(resolve, [], from_trusted=True)
        )


def test_a_built_expression_sees_only_the_builders() -> None:
    with pytest.raises(NameError):
        _harness._built_value("__import__('os')")
    with pytest.raises(NameError):
        _harness._built_value("open('/etc/passwd')")


def test_calls_the_rewrite_could_break_keep_their_meaning(sandbox: Sandbox) -> None:
    solution = "def apply_all(values, function=abs):\n    return [function(value) for value in values]\n"
    deep = " + ".join(["1"] * 700)  # deeper than the rewrite walks: compiled as written
    huge = "0x" + "f" * 4000  # more digits than int writes as decimal text
    setup = "import sys\ndef g(a: str(list(range(3)))) -> str([0] * 2):\n    pass\n"
    tests = (
        "assert apply_all(list(range(-2, 1)), function=abs) == [2, 1, 0]",  # a keyword named function
        f"assert apply_all([{deep}] * 2) == [700, 700]",
        f"assert apply_all([{huge}] * 2, function=int.bit_length) == [16000, 16000]",
        "assert g.__annotations__ == {'a': 'str(list(range(3)))', 'return': 'str([0] * 2)'}",
        # The tests rebind a builder where no name shows it: the value is built here, as the tests mean.
        "sys.modules['builtins'].range = lambda *args: [7]\nassert apply_all(list(range(5))) == [7]",
    )
    assert _rewritten(tests[-1], setup=setup, entry_point="apply_all")  # the check at the call is what holds
    assert judged_errors(sandbox, "apply_all", solution, *tests, setup=setup) == [None] * len(tests)
