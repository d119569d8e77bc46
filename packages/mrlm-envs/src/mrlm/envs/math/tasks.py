"""A seeded generator of arithmetic and algebra tasks, each with its exact answer."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

LEVELS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class MathTask:
    """A question and its exact answer.

    Attributes:
        question: the text shown to the agent.
        answer: the exact answer in canonical form (an integer or a reduced fraction ``p/q``).
        topic: what kind of problem this is.
        level: difficulty, 1 (easiest) to 5.
    """

    question: str
    answer: str
    topic: str
    level: int


def format_answer(value: Fraction) -> str:
    """Canonical text of an exact value: ``7``, ``-3/4``."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def generate_task(rng: np.random.Generator, level: int) -> MathTask:
    """Draw one task of difficulty ``level`` (1-5) from ``rng``.

    1: add or subtract two numbers below 100. 2: multiply, or divide exactly. 3: three operands with
    precedence. 4: add or subtract two fractions. 5: solve a linear equation ``a*x + b = c``.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    return _GENERATORS[level](rng)


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    return int(rng.integers(low, high + 1))


def _level1(rng: np.random.Generator) -> MathTask:
    a, b = _int(rng, 1, 99), _int(rng, 1, 99)
    if rng.random() < 0.5:
        return MathTask(f"What is {a} + {b}?", str(a + b), "addition", 1)
    return MathTask(f"What is {a} - {b}?", str(a - b), "subtraction", 1)


def _level2(rng: np.random.Generator) -> MathTask:
    a, b = _int(rng, 2, 30), _int(rng, 2, 30)
    if rng.random() < 0.5:
        return MathTask(f"What is {a} * {b}?", str(a * b), "multiplication", 2)
    return MathTask(f"What is {a * b} / {b}?", str(a), "division", 2)


def _level3(rng: np.random.Generator) -> MathTask:
    a, b, c = _int(rng, 2, 20), _int(rng, 2, 20), _int(rng, 2, 20)
    if rng.random() < 0.5:
        return MathTask(f"What is {a} + {b} * {c}?", str(a + b * c), "order of operations", 3)
    return MathTask(f"What is ({a} - {b}) * {c}?", str((a - b) * c), "order of operations", 3)


def _level4(rng: np.random.Generator) -> MathTask:
    # Proper fractions, written as drawn (not reduced), so the question never shows "4/1".
    (p, q), (r, t) = ((_int(rng, 1, d - 1), d) for d in (_int(rng, 2, 9), _int(rng, 2, 9)))
    sign = "+" if rng.random() < 0.5 else "-"
    value = Fraction(p, q) + Fraction(r, t) if sign == "+" else Fraction(p, q) - Fraction(r, t)
    question = f"What is {p}/{q} {sign} {r}/{t}? Give the answer as a reduced fraction or an integer."
    return MathTask(question, format_answer(value), "fractions", 4)


def _level5(rng: np.random.Generator) -> MathTask:
    x = _int(rng, -12, 12)
    a = _int(rng, 2, 9) * (1 if rng.random() < 0.5 else -1)
    b = _int(rng, -20, 20)
    c = a * x + b
    b_text = f"+ {b}" if b >= 0 else f"- {-b}"
    return MathTask(f"Solve for x: {a}x {b_text} = {c}", str(x), "linear equation", 5)


_GENERATORS = {1: _level1, 2: _level2, 3: _level3, 4: _level4, 5: _level5}
