"""Decide whether a predicted answer equals the gold answer.

Two paths. When both answers read as plain values (numbers, tuples of numbers, real intervals; see
:mod:`mrlm.envs.math.values`) they are compared exactly and at once, in this process. Anything else
(``(x+1)^2``, ``\\frac{\\sqrt{3}}{2}``, ``\\pi/2``) goes to math-verify in a worker process with a
deadline (:mod:`mrlm.envs.math.workers`), which works from any thread; a check that misses its deadline
counts as "not equal" with ``timed_out=True``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from mrlm.envs.math.values import Interval, parse_interval, parse_number, parse_tuple
from mrlm.envs.math.workers import VerifierPool, WorkerVerdict, default_pool

#: Longest answer compared; a longer "answer" is not one, and must not cost a symbolic check.
MAX_ANSWER_CHARS = 1_000

#: Seconds a symbolic check may take before it counts as "not equal".
DEFAULT_VERIFY_TIMEOUT = 5.0

VerifyMethod = Literal["none", "too_long", "exact", "text", "math_verify"]

Reading = tuple[tuple[str, "Fraction | tuple[Fraction, ...] | Interval"], ...]

_SPACING = re.compile(r"\s+|\\[!,;:]|\\left|\\right")
_PERCENT_NUMBER = re.compile(r"(-?[0-9]+(?:\.[0-9]+)?)\s*\\?%")
_INFINITY_WORD = re.compile(r"(?<![A-Za-z\\])(?:infinity|inf|oo)(?![A-Za-z])|∞")


@dataclass(frozen=True)
class Verdict:
    """The outcome of one answer check.

    Attributes:
        correct: True when the prediction equals the gold answer.
        method: how it was decided: ``"none"`` (no prediction), ``"too_long"`` (over
            :data:`MAX_ANSWER_CHARS`), ``"exact"`` (both plain values), ``"text"`` (identical text),
            ``"math_verify"`` (symbolic check in a worker).
        timed_out: True when the symbolic check missed its deadline.
        error: why the symbolic check failed, when it did; None otherwise.
    """

    correct: bool
    method: VerifyMethod
    timed_out: bool = False
    error: str | None = None


def check_answer(
    predicted: str | None,
    gold: str,
    *,
    percent_as_fraction: bool = False,
    timeout: float = DEFAULT_VERIFY_TIMEOUT,
    pool: VerifierPool | None = None,
) -> Verdict:
    """Whether ``predicted`` states the same answer as ``gold``.

    Equivalences: ``1/2 == 0.5 == \\frac{1}{2} == \\frac12``; ``1,000 == 1000``; ``x = 3 == 3``;
    ``x < 3 == (-\\infty, 3) == (-inf, 3)``; ``(2, 3) == x = 2, y = 3``; symbolic equality such as
    ``x^2+2x+1 == (x+1)^2`` (math-verify). A trailing ``%`` divides by 100 when
    ``percent_as_fraction`` is True (``50% == 0.5``), and is a unit otherwise (``50% == 50``).
    Plain numbers compare exactly: ``0.333 != 1/3``.

    Args:
        predicted: the extracted answer (None when the reply had none).
        gold: the gold answer.
        percent_as_fraction: how to read ``%``, as above.
        timeout: seconds the symbolic check may take (it runs in a worker process, so this holds in
            any thread); a timeout counts as not equal.
        pool: the worker pool for symbolic checks (the process-wide one by default).

    Never raises on any input.
    """
    if predicted is None or not predicted.strip():
        return Verdict(False, "none")
    if len(predicted) > MAX_ANSWER_CHARS:
        return Verdict(False, "too_long")
    gold_reading = _read(gold, percent_as_fraction)
    pred_reading = _read(predicted, percent_as_fraction) if gold_reading else ()
    if gold_reading and pred_reading:
        # Both are plain values: decided exactly. "(2, 3)" reads as a pair and as an interval; a match
        # in either reading counts.
        gold_values = dict(gold_reading)
        correct = any(gold_values.get(kind) == value for kind, value in pred_reading)
        return Verdict(correct, "exact")
    if _squash(predicted) == _squash(gold):
        return Verdict(True, "text")
    gold_text, pred_text = _prepare(gold, percent_as_fraction), _prepare(predicted, percent_as_fraction)
    cached = _CACHE.get((gold_text, pred_text))
    if cached is None:
        cached = (pool or default_pool()).compare(gold_text, pred_text, timeout)
        if not cached.timed_out and cached.error is None:
            _CACHE.put((gold_text, pred_text), cached)
    return Verdict(cached.equal, "math_verify", cached.timed_out, cached.error)


def answers_match(
    predicted: str | None,
    gold: str,
    *,
    percent_as_fraction: bool = False,
    timeout: float = DEFAULT_VERIFY_TIMEOUT,
) -> bool:
    """``check_answer(...).correct``."""
    return check_answer(predicted, gold, percent_as_fraction=percent_as_fraction, timeout=timeout).correct


@lru_cache(maxsize=4096)
def _read(text: str, percent_as_fraction: bool) -> Reading:
    """Every plain-value reading of ``text`` as (kind, value) pairs; empty when it has none."""
    number = parse_number(text, percent_as_fraction=percent_as_fraction)
    if number is not None:
        return (("number", number),)
    readings: list[tuple[str, Fraction | tuple[Fraction, ...] | Interval]] = []
    values = parse_tuple(text)
    if values is not None:
        readings.append(("tuple", values))
    interval = parse_interval(text)
    if interval is not None:
        readings.append(("interval", interval))
    return tuple(readings)


def _squash(text: str) -> str:
    return _SPACING.sub("", text.strip().strip("$")).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")


def _prepare(text: str, percent_as_fraction: bool) -> str:
    """``text`` for math-verify, with ``%`` read as configured and every infinity spelled ``\\infty``."""
    prepared = text.strip().strip("$").strip()
    if percent_as_fraction:
        prepared = _PERCENT_NUMBER.sub(lambda m: f"\\frac{{{m.group(1)}}}{{100}}", prepared)
    # Left over, a percent sign is a unit; math-verify would otherwise apply its own rule.
    prepared = prepared.replace("\\%", "").replace("%", "")
    return _INFINITY_WORD.sub(lambda _: "\\infty", prepared)


class _VerdictCache:
    """A small thread-safe LRU of symbolic verdicts: a group of sampled replies often repeats an
    answer, and a symbolic check costs far more than a lookup."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str], WorkerVerdict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> WorkerVerdict | None:
        with self._lock:
            verdict = self._items.get(key)
            if verdict is not None:
                self._items.move_to_end(key)
            return verdict

    def put(self, key: tuple[str, str], verdict: WorkerVerdict) -> None:
        with self._lock:
            self._items[key] = verdict
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_CACHE = _VerdictCache(4096)
