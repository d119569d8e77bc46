"""Multi-step tasks: a chain of operations applied to a number, or a composition of two functions.

Levels 1-2 are chains of ``level + 1`` steps; from level 3 on, half the tasks compose a linear ``f`` and
a quadratic ``g`` instead (``f(g(n))`` at 3, ``g(f(n))`` at 4, ``f(g(n)) - g(f(n))`` at 5). Divisions in
a chain are only drawn where they come out whole.
"""

from __future__ import annotations

import numpy as np

from mrlm.envs.math.algebra import linear
from mrlm.envs.math.tasks import MathTask, integer, nonzero, pick


def multi_step_task(rng: np.random.Generator, level: int) -> MathTask:
    """A chain of operations, or (levels 3-5, half the time) a function composition."""
    if level >= 3 and rng.random() < 0.5:
        return _composition(rng, level)
    return _chain(rng, level)


def _chain(rng: np.random.Generator, level: int) -> MathTask:
    value = integer(rng, 1, 10 * level)
    start = value
    steps: list[str] = []
    for _ in range(level + 1):
        kind = pick(rng, ("multiply", "add", "subtract", "divide"))
        divisors = [d for d in range(2, 10) if value != 0 and value % d == 0]
        if kind == "divide" and not divisors:
            kind = "add"
        if kind == "multiply":
            factor = integer(rng, 2, 3 + level)
            value *= factor
            steps.append(f"multiply by {factor}")
        elif kind == "divide":
            divisor = pick(rng, divisors)
            value //= divisor
            steps.append(f"divide by {divisor}")
        else:
            amount = integer(rng, 1, 10 * level)
            value = value + amount if kind == "add" else value - amount
            steps.append(f"{kind} {amount}")
    listed = ", ".join(steps[:-1]) + f" and then {steps[-1]}"
    question = f"What is the result when you start with {start}, {listed}?"
    return MathTask(question, str(value), "multi_step", level, subtopic="chain")


def _composition(rng: np.random.Generator, level: int) -> MathTask:
    a, b = nonzero(rng, 2, 5), nonzero(rng, 1, 9)
    c = 0 if level == 3 else nonzero(rng, 1, 5)
    d = nonzero(rng, 1, 9)
    n = integer(rng, -5, 5)

    def f(x: int) -> int:
        return a * x + b

    def g(x: int) -> int:
        return x * x + c * x + d

    if level == 3:
        asked, value = f"f(g({n}))", f(g(n))
    elif level == 4:
        asked, value = f"g(f({n}))", g(f(n))
    else:
        asked, value = f"f(g({n})) - g(f({n}))", f(g(n)) - g(f(n))
    question = (
        f"Let f(x) = {linear((a, 'x'), (b, ''))} and g(x) = {linear((1, 'x^2'), (c, 'x'), (d, ''))}. "
        f"What is {asked}?"
    )
    return MathTask(question, str(value), "multi_step", level, subtopic="composition")
