"""``mrlm-train ppo``: train a policy and its critic with PPO on an environment."""

from __future__ import annotations

from mrlm.train.algorithms.ppo import PPOConfig


def run_ppo(config: PPOConfig) -> int:
    """Train, print where the final model is, return 0."""
    from mrlm.train.algorithms.ppo import train

    final = train(config)
    print(f"final model: {final}")
    return 0
