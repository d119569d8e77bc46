"""The check of every count a setting gives (steps, batch sizes, passes): at least 1, named alone."""

from __future__ import annotations

__all__ = ["check_counts"]


def check_counts(**counts: int) -> None:
    """Raise ``ValueError`` naming the first of ``counts`` (setting name -> value) below 1, with its value.

    A message that lists several settings ("a, b and c must be at least 1") leaves the user to find
    which one was wrong; this one says ``micro_batch_size must be at least 1, got 0``.
    """
    for name, value in counts.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
