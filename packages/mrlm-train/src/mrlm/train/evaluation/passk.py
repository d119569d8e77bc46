"""pass@k: the chance that at least one of ``k`` samples solves a task, estimated from ``n >= k`` samples.

Chen et al. 2021, *Evaluating Large Language Models Trained on Code*, eq. 1. With ``n`` samples of a
task of which ``c`` succeed, the unbiased estimator is::

    pass@k = 1 - C(n - c, k) / C(n, k)

the probability that ``k`` samples drawn without replacement from the ``n`` include a success
(``C(n - c, k)`` counts the ``k``-subsets that hold none); the score of a model is its mean over tasks.
Drawing more samples than ``k`` (``n > k``) only lowers the variance. ``pass@1 = c / n``, the success
rate. Computing ``1 - (1 - c/n)^k`` instead would be biased low (it draws with replacement).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def pass_at_k(n: int, c: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)`` for one task with ``n`` samples, ``c`` of them successes.

    Exact integer binomials, one rounding at the division (Python rounds ``int / int`` correctly
    however large the integers). ``C(n - c, k)`` is 0 when fewer than ``k`` samples failed: then
    every ``k``-subset holds a success and the value is 1.

    Raises:
        ValueError: ``c`` outside ``[0, n]`` or ``k`` outside ``[1, n]``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"successes c must be in [0, n={n}], got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n={n}] (pass@k needs at least k samples), got {k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(tasks: Iterable[tuple[int, int]], k: int) -> float:
    """The mean of :func:`pass_at_k` over ``tasks``, each given as ``(n, c)``.

    Raises:
        ValueError: no task, or a task that :func:`pass_at_k` refuses.
    """
    values = [pass_at_k(n, c, k) for n, c in tasks]
    if not values:
        raise ValueError("pass@k needs at least one task")
    return sum(values) / len(values)


def reported_ks(samples: int) -> tuple[int, ...]:
    """The ``k`` values worth reporting with ``samples`` samples per task: the powers of two below
    it, and ``samples`` itself (``4 -> (1, 2, 4)``, ``10 -> (1, 2, 4, 8, 10)``).

    Raises:
        ValueError: ``samples`` below 1.
    """
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")
    ks = [1 << power for power in range(samples.bit_length()) if 1 << power < samples]
    return (*ks, samples)
