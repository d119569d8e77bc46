"""What crosses between the tests and the solution's process, and how (see mrlm.envs.code._harness).

Each case is a task whose tests pin one rule of the boundary; the solution is honest, so a failing
test means the rule is broken, not that the solution is.
"""

from __future__ import annotations

import pytest

from mrlm.envs.sandbox import Sandbox
from tests.envs.code.replies import judged_errors


def test_values_of_every_supported_type_arrive_as_the_tests_built_them(sandbox: Sandbox) -> None:
    solution = "def echo(value):\n    return value\n"
    values = [
        "None",
        "True",
        "-7",
        "2**5000",
        "1.5",
        "-0.0",
        "float('inf')",
        "3+4j",
        "'text \\ud800'",
        "b'\\x00\\xff'",
        "bytearray(b'ab')",
        "(1, (2, 3))",
        "[1, [2, None]]",
        "{1: 'a', (2, 3): [4]}",
        "{1, 2}",
        "frozenset({3})",
        "range(1, 10, 2)",
        "Fraction(1, 3)",
        "Decimal('1.10')",
        "date(2026, 1, 2)",
        "datetime(2026, 1, 2, 3, 4)",
        "time(5, 6)",
        "timedelta(days=1, seconds=2)",
        "list(range(100_000))",
        "[0.5] * 1000",
        "[(i, str(i)) for i in range(1000)]",
        "[{i: [i]} for i in range(100)]",
        "[{i} for i in range(100)]",
        "[1] * 99 + [True]",  # long lists of one number type cross packed; these must not
        "[2**70] + [1] * 99",
        "[0.5] * 99 + [1]",
        "[-(2**63)] * 64 + [2**63 - 1]",
        "[2**31 - 1, -(2**31)] * 64",  # the ends of what crosses marshalled to the solution
        "[2**31] * 64",
        "[1] * 63 + [1.5]",
        "[1.5] * 63 + [1]",
        "[False] * 64",
    ]
    tests = [f"value = {value}\nassert echo(value) == value and same(echo(value), value)" for value in values]
    setup = (
        "from fractions import Fraction\nfrom decimal import Decimal\nfrom datetime import date, datetime, time, timedelta\n"
        "def same(a, b):\n"
        "    return type(a) is type(b) and (type(a) is not list or all(map(same, a, b)))\n"
    )
    errors = judged_errors(sandbox, "echo", solution, *tests, setup=setup)
    assert errors == [None] * len(values), [
        (value, error) for value, error in zip(values, errors, strict=True) if error
    ]


def test_long_lists_of_numbers_arrive_in_the_solutions_process_as_built(sandbox: Sandbox) -> None:
    # What the solution's own code sees, not only what comes back: a long list crosses in one
    # block (marshalled or packed) and must still hold each item as the tests' exact type.
    solution = (
        "def kinds(values):\n"
        "    return type(values).__name__, [type(v).__name__ for v in values[::31]], values[-1]\n"
    )
    cases = {
        "list(range(-1000, 1000))": "('list', ['int'] * 65, 999)",
        "[2**31 - 1] * 63 + [-(2**31)]": "('list', ['int'] * 3, -(2**31))",
        "[2**31] * 63 + [7]": "('list', ['int'] * 3, 7)",
        "[0.5] * 63 + [-0.0]": "('list', ['float'] * 3, -0.0)",
        "[1] * 62 + [True]": "('list', ['int', 'int', 'bool'], True)",
        "[1] * 62 + [1.5]": "('list', ['int', 'int', 'float'], 1.5)",
    }
    tests = [f"assert kinds({value}) == {expected}" for value, expected in cases.items()]
    errors = judged_errors(sandbox, "kinds", solution, *tests)
    assert errors == [None] * len(cases), [
        (value, error) for value, error in zip(cases, errors, strict=True) if error
    ]


def test_in_place_changes_to_arguments_come_back_and_untouched_ones_stay(sandbox: Sandbox) -> None:
    solution = (
        "def fill(values, mapping, seen):\n"
        "    values.append(len(values))\n    mapping['n'] = 1\n    return None\n"
    )
    tests = (
        "values, mapping, seen = [0] * 100, {}, {1}\nfill(values, mapping, seen)\n"
        "assert values == [0] * 100 + [100] and mapping == {'n': 1} and seen == {1}",
    )
    assert judged_errors(sandbox, "fill", solution, *tests) == [None]


def test_objects_of_the_solution_stay_behind_and_their_methods_see_their_state(sandbox: Sandbox) -> None:
    solution = (
        "class Bag:\n"
        "    def __init__(self):\n        self.items = []\n"
        "    def add(self, item):\n        self.items.append(item)\n        return len(self.items)\n"
        "    def count(self):\n        return len(self.items)\n"
    )
    tests = (
        # Repeated calls of the same method, on two objects of one type.
        "first, second = Bag(), Bag()\nassert [first.add(i) for i in range(3)] == [1, 2, 3]\n"
        "assert second.add('x') == 1 and first.count() == 3 and second.count() == 1",
        # An attribute holding a list is the object's own list: a test's change shows in its methods.
        "bag = Bag()\nbag.items.append('kept')\nassert bag.count() == 1 and bag.items == ['kept']",
        # A method turned into a plain function on one object: a call runs what the name holds then.
        "bag = Bag()\nbag.add(1)\nbag.count = lambda: 'shadowed'\nassert bag.count() == 'shadowed'",
    )
    errors = judged_errors(sandbox, "Bag", solution, *tests)
    assert errors[:2] == [None, None], errors
    # Lambdas of the tests cross as call-only handles: setting one as an attribute works, and calling it
    # from the tests calls the tests' own function through the solution's object.
    assert errors[2] is None, errors


def test_exceptions_come_back_as_built_in_ones_with_their_arguments(sandbox: Sandbox) -> None:
    solution = (
        "class Mine(Exception):\n    pass\n"
        "def fail(kind):\n"
        "    if kind == 'key':\n        raise KeyError('missing')\n"
        "    if kind == 'mine':\n        raise Mine('own type')\n"
        "    raise ValueError(kind)\n"
    )
    tests = (
        "try:\n    fail('key')\nexcept KeyError as error:\n    assert error.args == ('missing',)\nelse:\n    raise AssertionError",
        "try:\n    fail('bad')\nexcept ValueError as error:\n    assert str(error) == 'bad'\nelse:\n    raise AssertionError",
        "fail('mine')",
    )
    errors = judged_errors(sandbox, "fail", solution, *tests)
    assert errors[:2] == [None, None], errors
    assert errors[2] is not None and errors[2].startswith("RemoteError: Mine: own type"), errors


def test_generators_and_iterators_are_iterated_remotely(sandbox: Sandbox) -> None:
    solution = "def count_up(limit):\n    yield from range(limit)\n"
    tests = (
        "assert list(count_up(5)) == [0, 1, 2, 3, 4]",
        "it = count_up(3)\nassert next(it) == 0 and next(it) == 1 and list(it) == [2]",
    )
    assert judged_errors(sandbox, "count_up", solution, *tests) == [None, None]


@pytest.mark.parametrize(
    ("returned", "verdict"),
    [
        ("float('nan')", "ValueError: a NaN returned by the solution has no order and no arithmetic"),
        ("[1, 2]", None),
    ],
)
def test_a_nan_of_the_solution_passes_no_tolerance_test(
    sandbox: Sandbox, returned: str, verdict: str | None
) -> None:
    solution = f"def value():\n    return {returned}\n"
    test = "got = value()\nassert not (abs(got[0] - 1) > 1e-9) if isinstance(got, list) else not (abs(got - 1) > 1e-9)"
    assert judged_errors(sandbox, "value", solution, test) == [verdict]


def test_in_place_changes_to_nested_lists_come_back(sandbox: Sandbox) -> None:
    solution = (
        "def rotate(grid):\n    grid[:] = [list(row) for row in zip(*grid[::-1])]\n    grid[0][0] += 100\n"
    )
    tests = ("grid = [[1, 2], [3, 4]]\nrotate(grid)\nassert grid == [[103, 1], [4, 2]], grid",)
    nested = "def touch(rows):\n    rows['a'].append(2)\n"
    assert judged_errors(sandbox, "rotate", solution, tests[0]) == [None]
    assert judged_errors(
        sandbox, "touch", nested, "rows = {'a': [1]}\ntouch(rows)\nassert rows == {'a': [1, 2]}, rows"
    ) == [None]
    # A long list of numbers crosses in one block, unless something in it can change in place.
    last = "def grow(values):\n    values[-1].append(2)\n"
    assert judged_errors(
        sandbox,
        "grow",
        last,
        "values = [0] * 63 + [[1]]\ngrow(values)\nassert values[-1] == [1, 2], values[-1]",
    ) == [None]


def test_huge_integers_inside_collections_cross(sandbox: Sandbox) -> None:
    solution = "def echo(value):\n    return value\n"
    tests = (
        "value = [2**20000, 1]\nassert echo(value) == value",
        "value = [(2**20000, 'x')]\nassert echo(value) == value",
    )
    assert judged_errors(sandbox, "echo", solution, *tests) == [None, None]


def test_a_class_method_does_not_make_the_same_name_of_another_class_a_method(sandbox: Sandbox) -> None:
    solution = (
        "class Maker:\n    @classmethod\n    def create(cls):\n        return 1\n"
        "class Plain:\n    create = 5\n"
    )
    test = "assert Maker.create() == 1\nassert Plain.create == 5, Plain.create"
    assert judged_errors(sandbox, "Maker", solution, test) == [None]
