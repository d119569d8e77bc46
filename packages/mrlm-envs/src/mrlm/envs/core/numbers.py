"""Reading a number-valued env argument (a reward, a penalty, a timeout) with its name in the error."""

from __future__ import annotations

import math

__all__ = ["finite_float"]


def finite_float(name: str, value: object) -> float:
    """``value`` as a float, or ``ValueError`` naming the argument ``name``.

    ``float("x")`` says "could not convert string to float" and names no argument; a nan or infinite
    reward would poison every return and advantage computed from it, so both are refused here.
    """
    if isinstance(value, bool):  # float(True) is 1.0: a flag given where a number goes
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return number
