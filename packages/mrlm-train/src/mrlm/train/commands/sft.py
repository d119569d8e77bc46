"""``mrlm-train sft``: fine-tune a model on chats, prompt/completion pairs or trajectories."""

from __future__ import annotations

from mrlm.train.algorithms.sft import SFTConfig


def run_sft(config: SFTConfig) -> int:
    """Train, print where the final model is, return 0."""
    from mrlm.train.algorithms.sft import train

    final = train(config)
    print(f"final model: {final}")
    return 0
