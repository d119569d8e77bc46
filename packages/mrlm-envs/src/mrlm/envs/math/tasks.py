"""What a math task is, and the small drawing functions every generator shares.

Generators draw only from the ``numpy.random.Generator`` they are given (never a global random state),
so the same generator state always gives the same task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

LEVELS = (1, 2, 3, 4, 5)


def is_level(value: object) -> bool:
    """Whether ``value`` is one of :data:`LEVELS` as an int (numpy's too); a float or a bool is not,
    though ``2.0 == 2`` and ``True == 1`` to Python."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value in LEVELS


T = TypeVar("T")


@dataclass(frozen=True)
class MathTask:
    """A question and its exact answer.

    Attributes:
        question: the text shown to the agent.
        answer: the gold answer. Generated tasks use a canonical form: an integer, a reduced fraction
            ``p/q``, a terminating decimal, a tuple ``(2, -3)`` or an interval ``(-\\infty, 5]``.
            Record tasks keep the dataset's answer text.
        topic: what kind of problem it is (a generator topic, ``"word_problem"`` for GSM8K records, the
            ``type`` of a MATH record).
        level: difficulty, 1 (easiest) to 5; None when a record does not say.
        subtopic: a finer label (the word-problem template, ...); empty when there is none.
        source: ``"generated"``, ``"gsm8k"`` or ``"math"``.
        index: the record's position in its collection; None for generated tasks.
        solution: the record's worked solution, when it has one (never shown to the agent).
    """

    question: str
    answer: str
    topic: str
    level: int | None
    subtopic: str = ""
    source: str = "generated"
    index: int | None = None
    solution: str | None = None


def integer(rng: np.random.Generator, low: int, high: int) -> int:
    """An integer in ``[low, high]``, both ends included.

    Scales one ``rng.random()`` draw: half the cost of ``rng.integers`` (generation speed is env
    throughput), with a bias below ``(high - low) / 2**53``.
    """
    return low + int(rng.random() * (high - low + 1))


def nonzero(rng: np.random.Generator, low: int, high: int) -> int:
    """An integer in ``[low, high]`` or ``[-high, -low]`` (``1 <= low <= high``)."""
    value = integer(rng, low, high)
    return value if rng.random() < 0.5 else -value


def pick(rng: np.random.Generator, options: Sequence[T]) -> T:
    """One element of ``options``, uniformly (cheaper than ``rng.choice`` on a Python sequence)."""
    return options[int(rng.random() * len(options))]


def distinct(rng: np.random.Generator, options: Sequence[T], count: int) -> list[T]:
    """``count`` different elements of ``options``, in random order."""
    chosen = rng.permutation(len(options))[:count]
    return [options[int(i)] for i in chosen]
