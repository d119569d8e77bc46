"""MAGRPO: multi-agent GRPO, each sample compared with the mean of its agent's group.

For the ``G`` samples of one agent on one task, with credited rewards ``r_1..r_G``::

    A_i = (r_i - (1/G) sum_j r_j) / (std(r) + eps)

then the clipped-ratio update of every agent's policy (see :mod:`mrlm.train.algorithms.multi_agent`
for the whole step: rollout, team or agent credit, update). With one agent this is GRPO.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mrlm.train.algorithms import multi_agent
from mrlm.train.algorithms.multi_agent import MultiAgentConfig
from mrlm.train.loop import RunConfig
from mrlm.train.ops.estimators import group_mean_advantages
from mrlm.train.rollout.envs import EnvFactory

#: The baseline of MAGRPO: the group's mean reward.
advantages = group_mean_advantages


@dataclass
class MAGRPOConfig(MultiAgentConfig):
    """Train several LLM agents together with MAGRPO (group-mean baseline) on a multi-agent env;
    flags on the command line, or --config FILE (YAML, the same keys)."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/magrpo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""


def train(config: MAGRPOConfig, *, env: EnvFactory | None = None) -> Path:
    """Run MAGRPO; return the final directory (see :func:`~mrlm.train.algorithms.multi_agent.train`)."""
    return multi_agent.train(config, advantages, env=env)
