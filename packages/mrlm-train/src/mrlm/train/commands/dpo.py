"""``mrlm-train dpo`` and ``mrlm-train online-dpo``: preference optimisation from a file or from env rollouts."""

from __future__ import annotations

from mrlm.train.algorithms.dpo import DPOConfig
from mrlm.train.algorithms.online_dpo import OnlineDPOConfig


def run_dpo(config: DPOConfig) -> int:
    """Train on ``config.data``, print where the final model is, return 0."""
    from mrlm.train.algorithms.dpo import train

    print(f"final model: {train(config)}")
    return 0


def run_online_dpo(config: OnlineDPOConfig) -> int:
    """Train on pairs from the env's rollouts, print where the final model is, return 0."""
    from mrlm.train.algorithms.online_dpo import train

    print(f"final model: {train(config)}")
    return 0
