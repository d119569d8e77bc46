"""MAREINFORCE: multi-agent REINFORCE, each sample's credited reward as its advantage (no baseline).

For the ``G`` samples of one agent on one task, with credited rewards ``r_1..r_G``::

    A_i = r_i

Unbiased but of high variance; see :mod:`mrlm.train.algorithms.multi_agent` for the whole step.
Its advantages are not centred, so they are not divided by the rewards' spread either
(``advantage_scaling`` is "none", and "group" or "batch" are refused): a group of equal rewards
``r`` would get ``r / eps`` (``10**4 r``) and outweigh every other group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from mrlm.train.algorithms import multi_agent
from mrlm.train.algorithms.multi_agent import MultiAgentConfig
from mrlm.train.loop import RunConfig
from mrlm.train.ops.advantages import StdScaling
from mrlm.train.ops.estimators import no_baseline_advantages
from mrlm.train.rollout.envs import EnvFactory


def advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """The baseline of MAREINFORCE: none, ``A_i = r_i`` (``group_size`` is not needed)."""
    return no_baseline_advantages(rewards)


@dataclass
class MAREINFORCEConfig(MultiAgentConfig):
    """Train several LLM agents together with MAREINFORCE (no baseline) on a multi-agent env;
    flags on the command line, or --config FILE (YAML, the same keys)."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/mareinforce", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""
    advantage_scaling: StdScaling = "none"
    """Only "none": uncentred advantages divided by the rewards' std blow up where the rewards agree."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.advantage_scaling != "none":
            raise ValueError(
                f"advantage_scaling={self.advantage_scaling!r} divides each reward by the rewards' std, but "
                "MAREINFORCE has no baseline to centre them: a group of equal rewards r would get r / eps "
                "(10**4 r). Use advantage_scaling='none', or a baseline that centres them (magrpo, marloo, "
                "maremax)"
            )


def train(config: MAREINFORCEConfig, *, env: EnvFactory | None = None) -> Path:
    """Run MAREINFORCE; return the final directory (see :func:`~mrlm.train.algorithms.multi_agent.train`)."""
    return multi_agent.train(config, advantages, env=env)
