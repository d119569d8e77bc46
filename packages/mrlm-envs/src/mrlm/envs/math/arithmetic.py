"""Arithmetic tasks: evaluate an expression of integers, decimals or fractions.

Expressions are random trees whose size grows with the level; divisions are made exact by construction
(integer quotients for integers, terminating decimals for decimals), so every answer is exact. The text
uses ``+ - * /`` and ``^`` with standard precedence, negative numbers in parentheses, and parentheses
around every operand of ``*`` and ``/`` that is itself a sum, product, quotient or written fraction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from mrlm.envs.math.tasks import MathTask, integer, pick
from mrlm.envs.math.values import format_decimal, format_number

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "^": 3}
_ATOM = 4

# Divisors that keep a terminating decimal terminating (their reduced numerators are 2s and 5s only).
_DECIMAL_DIVISORS = tuple(
    Fraction(text) for text in ("0.2", "0.25", "0.4", "0.5", "0.8", "1.25", "2", "2.5", "4", "5", "8")
)


@dataclass(frozen=True)
class _Node:
    text: str
    value: Fraction
    precedence: int
    leaf: bool = False


@dataclass(frozen=True)
class _Style:
    """How one topic at one level builds expressions."""

    kind: str  # "integers", "decimals" or "fractions"
    ops: str
    size: int  # operators in the expression
    leaf: Callable[[np.random.Generator], _Node]


# Leaves are drawn by functions defined below; a lambda looks them up when called.
_INTEGER_STYLES: dict[int, _Style] = {
    1: _Style("integers", "+-", 1, lambda r: _integer_leaf(r, 1, 99, 0.0)),
    2: _Style("integers", "*/", 1, lambda r: _integer_leaf(r, 2, 30, 0.0)),
    3: _Style("integers", "+-*/", 2, lambda r: _integer_leaf(r, 2, 20, 0.0)),
    4: _Style("integers", "+-*/", 3, lambda r: _integer_leaf(r, 1, 20, 0.3)),
    5: _Style("integers", "+-*/", 3, lambda r: _power_or_integer(r, 1, 15, 0.3)),
}

_DECIMAL_STYLES: dict[int, _Style] = {
    1: _Style("decimals", "+-", 1, lambda r: _decimal_leaf(r, 1, 999, 1, 0.0)),
    2: _Style("decimals", "+-*", 1, lambda r: _decimal_leaf(r, 1, 5000, 2, 0.0)),
    3: _Style("decimals", "+-*", 2, lambda r: _decimal_leaf(r, 1, 200, 1, 0.0)),
    4: _Style("decimals", "+-*/", 2, lambda r: _decimal_leaf(r, 1, 500, 1, 0.0)),
    5: _Style("decimals", "+-*/", 3, lambda r: _decimal_leaf(r, 1, 2000, 2, 0.3)),
}

_FRACTION_STYLES: dict[int, _Style] = {
    2: _Style("fractions", "+-", 1, lambda r: _fraction_leaf(r, 12, False, 0.0)),
    3: _Style("fractions", "*/", 1, lambda r: _fraction_leaf(r, 12, False, 0.0)),
    4: _Style("fractions", "+-*/", 2, lambda r: _fraction_leaf(r, 9, True, 0.0)),
    5: _Style("fractions", "+-*/", 3, lambda r: _mixed_leaf(r)),
}


def integers_task(rng: np.random.Generator, level: int) -> MathTask:
    """Integer arithmetic. 1: ``a ± b`` below 100. 2: ``a * b`` or exact ``a / b``. 3: two operators.
    4: three operators, negative numbers. 5: three operators with a power."""
    style = _INTEGER_STYLES[level]
    node = _build(rng, style, style.size)
    return MathTask(f"What is {node.text}?", format_number(node.value), "integers", level)


def decimals_task(rng: np.random.Generator, level: int) -> MathTask:
    """Decimal arithmetic. 1: ``a ± b`` with one decimal place. 2: two places, or times an integer.
    3: two operators. 4: two operators with exact division. 5: three operators, negative numbers."""
    style = _DECIMAL_STYLES[level]
    if level == 2 and rng.random() < 0.4:
        left, right = style.leaf(rng), _integer_leaf(rng, 2, 9, 0.0)
        node = _combine("*", left, right)
    else:
        node = _build(rng, style, style.size)
    return MathTask(f"What is {node.text}?", format_decimal(node.value), "decimals", level)


def fractions_task(rng: np.random.Generator, level: int) -> MathTask:
    """Fraction arithmetic; answers are reduced fractions or integers. 1: ``p/q ± r/q``. 2: ``±`` with
    different denominators. 3: ``*`` or ``/``. 4: two operators. 5: three operators, negatives, integers."""
    suffix = " Give the answer as a reduced fraction or an integer."
    if level == 1:
        q = integer(rng, 3, 12)
        left = _fraction_leaf_of(integer(rng, 1, q - 1), q)
        right = _fraction_leaf_of(integer(rng, 1, q - 1), q)
        node = _combine(pick(rng, "+-"), left, right)
        return MathTask(f"What is {node.text}?{suffix}", format_number(node.value), "fractions", level)
    style = _FRACTION_STYLES[level]
    node = _build(rng, style, style.size)
    return MathTask(f"What is {node.text}?{suffix}", format_number(node.value), "fractions", level)


# --------------------------------------------------------------------------------------------------
# Trees


def _build(rng: np.random.Generator, style: _Style, size: int) -> _Node:
    if size == 0:
        return style.leaf(rng)
    op = pick(rng, style.ops)
    left_size = integer(rng, 0, size - 1)
    left = _build(rng, style, left_size)
    right = _build(rng, style, size - 1 - left_size)
    if op == "/":
        return _divide(rng, style, left, right)
    return _combine(op, left, right)


def _divide(rng: np.random.Generator, style: _Style, left: _Node, right: _Node) -> _Node:
    """``left / right``, changed where needed so that the quotient is exact in the topic's terms."""
    if style.kind == "integers":
        if right.value == 0:
            right = _integer_leaf(rng, 2, 9, 0.0)
        if left.leaf and left.precedence == _ATOM and left.value.denominator == 1:
            # Re-read the drawn left number as the quotient: a * d / d is always exact.
            return _combine("/", _number_leaf(left.value * right.value), right)
        if left.value % right.value == 0:
            return _combine("/", left, right)
        divisors = [d for d in range(2, 13) if left.value != 0 and left.value % d == 0]
        if divisors:
            return _combine("/", left, _number_leaf(Fraction(pick(rng, divisors))))
        return _combine("+", left, right)
    if style.kind == "decimals":
        if right.value != 0 and _terminates(left.value / right.value, 4):
            return _combine("/", left, right)
        order = rng.permutation(len(_DECIMAL_DIVISORS))
        for i in order:
            divisor = _DECIMAL_DIVISORS[int(i)]
            if _terminates(left.value / divisor, 4):
                return _combine("/", left, _number_leaf(divisor))
        return _combine("-", left, right)
    if right.value == 0:
        return _combine("+", left, right)
    return _combine("/", left, right)


def _combine(op: str, left: _Node, right: _Node) -> _Node:
    if op == "+":
        value = left.value + right.value
    elif op == "-":
        value = left.value - right.value
    elif op == "*":
        value = left.value * right.value
    else:
        value = left.value / right.value
    text = f"{_operand(op, left, False)} {op} {_operand(op, right, True)}"
    return _Node(text, value, _PRECEDENCE[op])


def _operand(op: str, child: _Node, right: bool) -> str:
    # Under * and /, a written fraction p/q counts as a quotient and is bracketed too.
    multiplicative = op in "*/"
    bracket = child.precedence <= 2 if multiplicative else (right and child.precedence == 1)
    return f"({child.text})" if bracket else child.text


def _terminates(value: Fraction, places: int) -> bool:
    return 10**places % value.denominator == 0


# --------------------------------------------------------------------------------------------------
# Leaves


def _number_leaf(value: Fraction) -> _Node:
    text = format_decimal(value) if value.denominator != 1 else str(value.numerator)
    return _Node(f"({text})" if value < 0 else text, value, _ATOM, leaf=True)


def _integer_leaf(rng: np.random.Generator, low: int, high: int, negative: float) -> _Node:
    value = integer(rng, low, high)
    if negative and rng.random() < negative:
        value = -value
    return _number_leaf(Fraction(value))


def _power_or_integer(rng: np.random.Generator, low: int, high: int, negative: float) -> _Node:
    if rng.random() < 0.3:
        base = integer(rng, 2, 9) * (-1 if rng.random() < negative else 1)
        exponent = integer(rng, 2, 3) if abs(base) <= 5 else 2
        base_text = f"({base})" if base < 0 else str(base)
        return _Node(f"{base_text}^{exponent}", Fraction(base) ** exponent, _PRECEDENCE["^"], leaf=True)
    return _integer_leaf(rng, low, high, negative)


def _decimal_leaf(rng: np.random.Generator, low: int, high: int, places: int, negative: float) -> _Node:
    scaled = integer(rng, low, high)
    if scaled % 10**places == 0:
        scaled += 1  # keep the written number a decimal: 3.0 would be an integer in disguise
    value = Fraction(scaled, 10**places)
    if negative and rng.random() < negative:
        value = -value
    return _number_leaf(value)


def _fraction_leaf_of(numerator: int, denominator: int) -> _Node:
    # Written as drawn (not reduced), so "4/6" may appear; precedence 2: it reads as a quotient.
    value = Fraction(numerator, denominator)
    if numerator < 0:
        return _Node(f"(-{-numerator}/{denominator})", value, _ATOM, leaf=True)
    return _Node(f"{numerator}/{denominator}", value, _PRECEDENCE["/"], leaf=True)


def _fraction_leaf(rng: np.random.Generator, max_denominator: int, improper: bool, negative: float) -> _Node:
    denominator = integer(rng, 2, max_denominator)
    numerator = integer(rng, 1, 2 * denominator - 1 if improper else denominator - 1)
    if numerator % denominator == 0:
        numerator += 1
    if negative and rng.random() < negative:
        numerator = -numerator
    return _fraction_leaf_of(numerator, denominator)


def _mixed_leaf(rng: np.random.Generator) -> _Node:
    if rng.random() < 0.2:
        return _integer_leaf(rng, 2, 9, 0.3)
    return _fraction_leaf(rng, 12, True, 0.3)
