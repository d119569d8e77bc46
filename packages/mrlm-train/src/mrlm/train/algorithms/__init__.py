"""Training algorithms shipped with mrlm-train.

``ALGORITHMS`` maps each algorithm's command-line name to a one-line description. It lists only
algorithms whose code exists in this package; an algorithm module adds its entry when it lands.
"""

from __future__ import annotations

ALGORITHMS: dict[str, str] = {
    "ippo": "independent PPO: several agents trained together, each its own policy, critic and token-level GAE",
    "magrpo": "multi-agent GRPO: several agents' policies trained together, each sample against its group's mean",
    "mareinforce": "multi-agent REINFORCE: several agents trained together, no baseline",
    "maremax": "multi-agent ReMax: several agents trained together, each sample against its group's best",
    "marloo": "multi-agent RLOO: several agents trained together, each sample against the others' mean",
    "dpo": "direct preference optimisation on chosen/rejected pairs (sigmoid, ipo, hinge, robust losses)",
    "online-dpo": "DPO on pairs of the best and worst reply of each group of env rollouts, re-sampled as it trains",
    "grpo": "group relative policy optimisation on any text env (with DAPO, Dr. GRPO and GSPO switches)",
    "ppo": "proximal policy optimisation with a critic (value head or value model), token-level GAE over turns",
    "sft": "supervised fine-tuning on chats, prompt/completion pairs or recorded trajectories",
}


def available_algorithms() -> tuple[str, ...]:
    """Names of the algorithms that exist, sorted."""
    return tuple(sorted(ALGORITHMS))
