"""``mrlm-train magrpo | mareinforce | marloo | maremax``: train several agents together."""

from __future__ import annotations

from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.mareinforce import MAREINFORCEConfig
from mrlm.train.algorithms.maremax import MAReMaxConfig
from mrlm.train.algorithms.marloo import MARLOOConfig


def run_magrpo(config: MAGRPOConfig) -> int:
    """Train with MAGRPO, print where the final models are, return 0."""
    from mrlm.train.algorithms.magrpo import train

    print(f"final models: {train(config)}")
    return 0


def run_mareinforce(config: MAREINFORCEConfig) -> int:
    """Train with MAREINFORCE, print where the final models are, return 0."""
    from mrlm.train.algorithms.mareinforce import train

    print(f"final models: {train(config)}")
    return 0


def run_marloo(config: MARLOOConfig) -> int:
    """Train with MARLOO, print where the final models are, return 0."""
    from mrlm.train.algorithms.marloo import train

    print(f"final models: {train(config)}")
    return 0


def run_maremax(config: MAReMaxConfig) -> int:
    """Train with MAReMax, print where the final models are, return 0."""
    from mrlm.train.algorithms.maremax import train

    print(f"final models: {train(config)}")
    return 0
