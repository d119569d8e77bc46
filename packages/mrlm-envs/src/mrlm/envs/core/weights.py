"""Weights of the reward components an env adds up into one score."""

from __future__ import annotations

from collections.abc import Mapping


def component_weights(weights: Mapping[str, float] | None, defaults: Mapping[str, float]) -> dict[str, float]:
    """The weight of every component of ``defaults``: ``weights`` over the defaults.

    Raises ValueError on a component ``defaults`` does not name, or a weight that is negative, not
    finite or not a number (a bool is refused, though it is an int to Python).
    """
    chosen = dict(defaults)
    for name, value in (weights or {}).items():
        if name not in defaults:
            raise ValueError(f"unknown reward component {name!r}; components are {', '.join(defaults)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
            raise ValueError(f"the weight of {name!r} must be a finite number >= 0, got {value!r}")
        chosen[name] = float(value)
    return chosen
