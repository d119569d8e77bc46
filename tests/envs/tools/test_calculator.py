"""The calculator agrees with Python's math on random expressions and refuses hostile input quickly."""

from __future__ import annotations

import math
import random
import time

import pytest

from mrlm.envs.tools.calculator import (
    MAX_FACTORIAL,
    CalculatorError,
    calculator_tool,
    evaluate,
    format_number,
)
from mrlm.envs.tools.registry import ToolRegistry

#: How Python spells each calculator function, for the independent evaluation.
REFERENCE_NAMESPACE = {
    "__builtins__": {},
    "sqrt": math.sqrt,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "atan": math.atan,
    "exp": math.exp,
    "ln": math.log,
    "log": math.log,
    "log10": math.log10,
    "abs": abs,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": math.factorial,
    "round": round,
    "min": min,
    "max": max,
    "pow": pow,
    "pi": math.pi,
    "e": math.e,
    "tau": math.tau,
}
UNARY = ("sqrt", "sin", "cos", "tan", "atan", "exp", "ln", "log", "log10", "abs", "floor", "ceil", "round")


def _random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        choice = rng.random()
        if choice < 0.5:
            return str(rng.randint(0, 60))
        if choice < 0.8:
            return f"{rng.uniform(0, 20):.3f}"
        return rng.choice(["pi", "e", "tau"])
    kind = rng.random()
    left, right = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    if kind < 0.45:
        return f"({left} {rng.choice(['+', '-', '*', '/', '//', '%'])} {right})"
    if kind < 0.55:
        return f"({left}) ** {rng.randint(0, 3)}"
    if kind < 0.85:
        return f"{rng.choice(UNARY)}({left})"
    if kind < 0.9:
        return f"factorial({rng.randint(0, 12)})"
    if kind < 0.95:
        return f"{rng.choice(['min', 'max'])}({left}, {right})"
    return f"round({left}, {rng.randint(0, 4)})"


def test_agrees_with_python_on_random_expressions() -> None:
    rng = random.Random(1234)
    compared = refused = 0
    for _ in range(2000):
        text = _random_expression(rng, 4)
        try:
            expected = eval(text, REFERENCE_NAMESPACE)  # test-generated text, math names only
        except (ZeroDivisionError, ValueError, OverflowError, TypeError):
            expected = None
        if isinstance(expected, complex) or (isinstance(expected, float) and not math.isfinite(expected)):
            expected = None
        if expected is None:
            with pytest.raises(CalculatorError):
                evaluate(text)
            refused += 1
            continue
        value = evaluate(text)
        assert type(value) is type(expected), text
        assert value == expected or math.isclose(value, expected, rel_tol=1e-12), text
        compared += 1
    assert compared > 1500 and refused > 10


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2^10", 1024),
        ("2**10", 1024),
        ("-3^2", -9),
        ("7 // 2 + 7 % 2", 4),
        ("12345678901234567890 * 98765432109876543210", 12345678901234567890 * 98765432109876543210),
        ("sqrt(16) + 1", 5.0),
        ("log(8, 2)", 3.0),
        ("ln(e)", 1.0),
        ("log10(1000)", 3.0),
        ("factorial(20)", math.factorial(20)),
        ("round(pi, 4)", 3.1416),
        ("round(2.5)", 2),
        ("min(3, -1, 2) + max(1, 9)", 8),
        ("pow(2, 100, 1000007)", pow(2, 100, 1000007)),
        ("pow(2, -1)", 0.5),
        ("abs(-4.5) + floor(2.7) + ceil(2.1)", 9.5),
        ("1_000 + 1e3", 2000.0),
        ("  (1 +\n 2)  ", 3),
        ("tau / 2 - pi", 0.0),
    ],
)
def test_known_values(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("9**9**9**9", "too large"),
        ("2 ** 100000", "too large"),
        ("10 ** 999 * 10 ** 999 * 10 ** 999 * 10 ** 999", "too large"),
        ("pow(7, 10 ** 6)", "too large"),
        ("factorial(10**9)", f"limited to n <= {MAX_FACTORIAL}"),
        ("factorial(factorial(20))", "limited"),
        ("factorial(-1)", "non-negative integer"),
        ("factorial(2.5)", "non-negative integer"),
        ("10.0 ** 400", "too large"),
        ("exp(10 ** 5)", "too large"),
        ("1e308 * 10", "too large"),
        ("(10 ** 400) / 3.0", "too large"),
        ("sqrt(10 ** 400)", "too large"),
        ("round(1.5, 10 ** 9)", "round()"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("sqrt(-1)", "math domain error"),
        ("ln(0)", "math domain error"),
        ("(-8) ** (1 / 3)", "not a real number"),
        ("-" * 300 + "1", "nested too deeply"),
        ("(" * 240 + "1" + ")" * 240, "invalid syntax"),
        ("sqrt(" * 60 + "1" + ")" * 60, "nested too deeply"),
        ("1 + " * 200 + "1", "too long"),
        ("1" * 600, "too long"),
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('echo hi')", "attribute access"),
        ("eval('1')", "unknown function 'eval'"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("(1).real", "attribute access"),
        ("pi.__class__", "attribute access"),
        ("math.sqrt(2)", "attribute access"),
        ("(lambda: 1)()", "only the calculator's functions"),
        ("lambda x: x", "lambda is not allowed"),
        ("[x for x in (1, 2)]", "comprehensions"),
        ("sum(x for x in (1, 2))", "unknown function 'sum'"),
        ("{1: 2}", "dicts"),
        ("[1, 2]", "lists"),
        ("(1, 2)", "tuples"),
        ("x", "unknown name 'x'"),
        ("__builtins__", "unknown name"),
        ("sqrt", "is a function"),
        ("sqrt(x=4)", "no keyword arguments"),
        ("sqrt(*[4])", "unpacking"),
        ("sqrt(1, 2)", "takes 1 arguments"),
        ("min(1)", "at least 2"),
        ("'abc'", "str values are not allowed"),
        ("f'{1}'", "strings are not allowed"),
        ("True + 1", "bool values"),
        ("1j", "complex numbers"),
        ("1 < 2", "comparisons"),
        ("1 and 2", "'and'/'or'"),
        ("1 if 1 else 2", "conditional"),
        ("(y := 3)", "assignment"),
        ("1 << 3", "'<<' is not allowed"),
        ("~1", "'~' is not allowed"),
        ("not 1", "'not' is not allowed"),
        ("1 & 3", "'&' is not allowed"),
        ("import os", "invalid syntax"),
        ("1 +", "invalid syntax"),
        ("", "empty"),
        ("1\x00", "null bytes"),
    ],
)
def test_hostile_and_invalid_input_is_refused_quickly(expression: str, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(CalculatorError) as caught:
        evaluate(expression)
    assert message in str(caught.value)
    assert time.perf_counter() - start < 0.5


def test_the_calculator_tool() -> None:
    registry = ToolRegistry([calculator_tool()])
    result = registry.call("calculator", {"expression": "3 ^ 4 * 2"})
    assert (result.ok, result.content) == (True, "162")
    error = registry.call("calculator", {"expression": "1/0"})
    assert (error.ok, error.malformed, error.content) == (False, False, "division by zero")
    assert registry.call("calculator", {"expression": "1" * 501}).malformed  # the schema's maxLength
    assert format_number(0.1 + 0.2) == "0.30000000000000004" and format_number(10**30) == "1" + "0" * 30
