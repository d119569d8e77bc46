"""Algebra tasks: linear equations, systems of two linear equations, linear inequalities.

Each task is built backwards from its solution (or solved exactly with ``Fraction``), so the gold answer
is exact. Terms are written the usual way: ``3x - 4``, ``-x + 2``, ``2(x - 5)``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from mrlm.envs.math.tasks import MathTask, integer, nonzero, pick
from mrlm.envs.math.values import Interval, format_interval, format_number, format_tuple

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def linear_equation_task(rng: np.random.Generator, level: int) -> MathTask:
    """Solve for x. 1: ``x + b = c``. 2: ``ax + b = c``. 3: x on both sides. 4: with brackets.
    5: two bracketed terms; the solution may be a fraction."""
    if level == 1:
        x, b = integer(rng, -10, 20), nonzero(rng, 1, 20)
        lhs, rhs = linear((1, "x"), (b, "")), str(x + b)
    elif level == 2:
        a, b, x = nonzero(rng, 2, 9), nonzero(rng, 1, 20), integer(rng, -12, 12)
        lhs, rhs = linear((a, "x"), (b, "")), str(a * x + b)
    elif level == 3:
        a, c = _distinct_coefficients(rng, 1, 9)
        b, x = nonzero(rng, 1, 20), integer(rng, -12, 12)
        lhs, rhs = linear((a, "x"), (b, "")), linear((c, "x"), ((a - c) * x + b, ""))
    elif level == 4:
        a, c = _distinct_coefficients(rng, 2, 9)
        b, x = nonzero(rng, 1, 9), integer(rng, -10, 10)
        lhs = f"{_factor(a)}({linear((1, 'x'), (b, ''))})"
        rhs = linear((c, "x"), (a * (x + b) - c * x, ""))
    else:
        a, c = integer(rng, 2, 9), integer(rng, 2, 8)
        if c >= a:
            c += 1  # a != c, so the equation has exactly one solution
        b, d, e = nonzero(rng, 1, 9), nonzero(rng, 1, 9), integer(rng, -30, 30)
        x_value = Fraction(e - a * b - c * d, a - c)
        lhs = f"{a}({linear((1, 'x'), (b, ''))}) - {c}({linear((1, 'x'), (-d, ''))})"
        rhs = str(e)
        return MathTask(f"Solve for x: {lhs} = {rhs}", format_number(x_value), "linear_equation", level)
    return MathTask(f"Solve for x: {lhs} = {rhs}", str(x), "linear_equation", level)


def linear_system_task(rng: np.random.Generator, level: int) -> MathTask:
    """Solve two linear equations in x and y; the answer is the pair ``(x, y)``. 1: ``x + y``, ``x - y``.
    2-4: growing coefficients, integer solutions. 5: a solution in fractions."""
    if level == 1:
        x, y = integer(rng, -5, 15), integer(rng, -5, 15)
        equations = [(1, 1, x + y), (1, -1, x - y)]
        solution = (Fraction(x), Fraction(y))
    else:
        low, high = {2: (1, 5), 3: (-6, 6), 4: (-12, 12), 5: (-9, 9)}[level]
        a, b, c, d = _invertible(rng, low, high)
        if level < 5:
            x, y = integer(rng, -15, 15), integer(rng, -15, 15)
            e, f = a * x + b * y, c * x + d * y
        else:
            e, f = integer(rng, -20, 20), integer(rng, -20, 20)
        determinant = a * d - b * c
        solution = (Fraction(e * d - b * f, determinant), Fraction(a * f - e * c, determinant))
        equations = [(a, b, e), (c, d, f)]
    first, second = (f"{linear((p, 'x'), (q, 'y'))} = {r}" for p, q, r in equations)
    question = (
        f"Solve the system of equations: {first} and {second}. Give the answer as an ordered pair (x, y)."
    )
    return MathTask(question, format_tuple(solution), "linear_system", level)


def inequality_task(rng: np.random.Generator, level: int) -> MathTask:
    """Solve a linear inequality in x; the answer is an interval. 1: ``x + b < c``. 2: ``ax + b < c``.
    3: a negative coefficient may flip the sign. 4: x on both sides. 5: a compound ``p < ax + b <= q``."""
    suffix = "Give the answer in interval notation."
    if level == 5:
        a, b = nonzero(rng, 2, 9), nonzero(rng, 1, 10)
        low = integer(rng, -20, 15)
        high = low + integer(rng, 1, 15)
        low_op, high_op = pick(rng, ("<", "<=")), pick(rng, ("<", "<="))
        ends = [(Fraction(low - b, a), low_op == "<="), (Fraction(high - b, a), high_op == "<=")]
        if a < 0:
            ends.reverse()
        (start, start_closed), (end, end_closed) = ends
        interval = Interval(start, end, start_closed, end_closed)
        statement = f"{low} {low_op} {linear((a, 'x'), (b, ''))} {high_op} {high}"
        return MathTask(
            f"Solve the inequality {statement}. {suffix}", format_interval(interval), "inequality", 5
        )
    op = pick(rng, ("<", "<=", ">", ">="))
    if level <= 3:
        a = 1 if level == 1 else integer(rng, 2, 9) if level == 2 else nonzero(rng, 2, 9)
        b, k = nonzero(rng, 1, 20), integer(rng, -10, 20)
        lhs, rhs = linear((a, "x"), (b, "")), str(a * k + b)
        slope, bound = a, Fraction(k)
    else:
        a, c = _distinct_coefficients(rng, 1, 9)
        b, d = nonzero(rng, 1, 20), integer(rng, -20, 20)
        lhs, rhs = linear((a, "x"), (b, "")), linear((c, "x"), (d, ""))
        slope, bound = a - c, Fraction(d - b, a - c)
    solved = op if slope > 0 else _FLIP[op]
    interval = _ray(solved, bound)
    return MathTask(
        f"Solve the inequality {lhs} {op} {rhs}. {suffix}", format_interval(interval), "inequality", level
    )


# --------------------------------------------------------------------------------------------------


def linear(*terms: tuple[int | Fraction, str]) -> str:
    """A sum of terms ``(coefficient, variable)`` (``""`` for a constant): ``3x - y + 4``; ``0`` if empty."""
    text = ""
    for coefficient, variable in terms:
        if coefficient == 0:
            continue
        magnitude = abs(Fraction(coefficient))
        body = variable if variable and magnitude == 1 else f"{format_number(magnitude)}{variable}"
        if not text:
            text = f"-{body}" if coefficient < 0 else body
        else:
            text += f" - {body}" if coefficient < 0 else f" + {body}"
    return text or "0"


def _factor(a: int) -> str:
    return "-" if a == -1 else "" if a == 1 else str(a)


def _distinct_coefficients(rng: np.random.Generator, low: int, high: int) -> tuple[int, int]:
    a = nonzero(rng, low, high)
    c = nonzero(rng, low, high)
    while c == a:
        c = nonzero(rng, low, high)
    return a, c


def _invertible(rng: np.random.Generator, low: int, high: int) -> tuple[int, int, int, int]:
    """Four nonzero coefficients ``a b / c d`` in ``[low, high]`` with ``ad - bc != 0``."""
    magnitude = max(abs(low), abs(high))

    def draw() -> int:
        return integer(rng, max(low, 1), high) if low > 0 else nonzero(rng, 1, magnitude)

    while True:
        a, b, c, d = draw(), draw(), draw(), draw()
        if a * d - b * c != 0:
            return a, b, c, d


def _ray(op: str, bound: Fraction) -> Interval:
    """The solution set of ``x op bound``."""
    if op in ("<", "<="):
        return Interval(None, bound, False, op == "<=")
    return Interval(bound, None, op == ">=", False)
