"""``mrlm-train grpo``: train a policy with GRPO on an environment."""

from __future__ import annotations

from mrlm.train.algorithms.grpo import GRPOConfig


def run_grpo(config: GRPOConfig) -> int:
    """Train, print where the final model is, return 0."""
    from mrlm.train.algorithms.grpo import train

    final = train(config)
    print(f"final model: {final}")
    return 0
