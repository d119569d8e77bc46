"""Experiment trackers (TensorBoard, Weights & Biases) through accelerate.

accelerate skips a requested tracker whose package is missing with only a debug message, so a run
would go unrecorded without anyone noticing: the packages are checked here first, loudly.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping
from typing import Any

# Tracker name -> (module that must import, what to install).
_PACKAGES: dict[str, tuple[str, str]] = {
    "tensorboard": ("tensorboard", "tensorboard"),
    "wandb": ("wandb", "wandb"),
}


def check_trackers(names: Iterable[str]) -> list[str]:
    """The tracker names, after checking each is known and its package importable."""
    checked = []
    for name in names:
        if name not in _PACKAGES:
            raise ValueError(f"unknown tracker {name!r}; known: {sorted(_PACKAGES)}")
        module, package = _PACKAGES[name]
        if importlib.util.find_spec(module) is None:
            raise ImportError(
                f"run.report_to includes {name!r} but the {package} package is not installed: "
                f"pip install {package} (or drop {name!r} from report_to)"
            )
        checked.append(name)
    return checked


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config as ``{"optim/learning_rate": 1e-05, ...}`` with scalar values (what trackers accept)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, prefix=f"{name}/"))
        elif isinstance(value, (bool, int, float, str)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat
