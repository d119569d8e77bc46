"""Checks every trainer's settings share, each naming the one setting that is wrong, with its value."""

from __future__ import annotations

import math

__all__ = ["check_counts", "check_non_negative", "check_positive"]


def check_counts(**counts: int) -> None:
    """Raise ``ValueError`` naming the first of ``counts`` (setting name -> value) below 1, with its value.

    A message that lists several settings ("a, b and c must be at least 1") leaves the user to find
    which one was wrong; this one says ``micro_batch_size must be at least 1, got 0``.
    """
    for name, value in counts.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def check_non_negative(**values: float) -> None:
    """Raise ``ValueError`` naming the first of ``values`` that is not a finite number >= 0.

    Tests for what is allowed rather than for what is not: nan passes a ``value < 0`` check, and
    an infinite coefficient turns a loss or a reward into nan later, after the model has loaded.
    """
    for name, value in values.items():
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")


def check_positive(**values: float) -> None:
    """Raise ``ValueError`` naming the first of ``values`` that is not a finite number > 0."""
    for name, value in values.items():
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
