"""Whether a function really uses a helper, read from the syntax tree."""

from __future__ import annotations

import ast

import pytest

from mrlm.envs.coop_code import usage

CASES = {
    # The result flows somewhere: used.
    "def f(x):\n    return h(x) + 1\n": "used",
    "def f(x):\n    y = h(x)\n    return y * 2\n": "used",
    "def f(xs):\n    return [v for v in xs if h(v)]\n": "used",
    "def f(xs):\n    for part in h(xs):\n        print(part)\n": "used",
    "def f(x):\n    if h(x):\n        return 1\n    return 0\n": "used",
    "def f(x):\n    total = 0\n    total += h(x)\n    return total\n": "used",
    "def f(x, out):\n    out.value = h(x)\n": "used",
    "def f(x):\n    return g(h(x))\n": "used",
    "def f(x):\n    return h(x.strip())\n": "used",  # it does some of the work: not a mere forward
    "def f(x):\n    x = x.lower()\n    return h(x)\n": "used",
    # Called, but the value goes nowhere.
    "def f(x):\n    h(x)\n    return x\n": "result_ignored",
    "def f(x):\n    unused = h(x)\n    return x\n": "result_ignored",
    # The whole body forwards its input.
    "def f(x):\n    return h(x)\n": "wrapper",
    'def f(x, k=2):\n    """Doc."""\n    return h(x, k, flag=True)\n': "wrapper",
    "def f(*args):\n    r = h(*args)\n    return r\n": "wrapper",
    # Never called, or no such function.
    "def f(x):\n    return x\n": "not_called",
    "def f(x):\n    return hh(x) + h\n": "not_called",
    "def g(x):\n    return h(x) + 1\n": "not_defined",
    # Calls that cannot reach the helper: in code that never runs, or to a local of the same name.
    "def f(x):\n    if False:\n        return h(x) + 1\n    return x\n": "not_called",
    "def f(x):\n    while 0:\n        x = h(x) + 1\n    return x\n": "not_called",
    "def f(x):\n    if 1:\n        return x\n    else:\n        return h(x) + 1\n": "not_called",
    "def f(x):\n    return x\n    return h(x) + 1\n": "not_called",
    "def f(x):\n    def h(v):\n        return v\n    return h(x) + 1\n": "not_called",
    "def f(x, h=abs):\n    return h(x) + 1\n": "not_called",
    "def f(x):\n    h = abs\n    return h(x) + 1\n": "not_called",
    "def f(x):\n    from math import floor as h\n    return h(x) + 1\n": "not_called",
    "def f(x):\n    return (lambda h: h(x) + 1)(abs)\n": "not_called",
    "def f(x):\n    return h(x) + 1\nf = abs\n": "not_called",  # what runs as f is another function
    # Reachable calls still count: a false constant's else, a true one's body, code before a return.
    "def f(x):\n    if 0:\n        pass\n    else:\n        return h(x) + 1\n": "used",
    "def f(x):\n    if x:\n        return h(x) + 1\n    return 0\n": "used",
    "def f(x):\n    y = h(x) + 1\n    return y\n    print(x)\n": "used",
}


@pytest.mark.parametrize(("code", "expected"), list(CASES.items()))
def test_usage(code: str, expected: str) -> None:
    assert usage(ast.parse(code), "f", "h") == expected


def test_the_last_definition_stands_and_no_tree_means_not_defined() -> None:
    code = "def f(x):\n    return h(x) + 1\n\ndef f(x):\n    return x\n"
    assert usage(ast.parse(code), "f", "h") == "not_called"
    assert usage(None, "f", "h") == "not_defined"
