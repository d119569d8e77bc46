"""MARLOO: multi-agent REINFORCE leave-one-out, each sample compared with the mean of the others.

For the ``G`` samples of one agent on one task, with credited rewards ``r_1..r_G``::

    A_i = (r_i - (1/(G-1)) sum_{j != i} r_j) / (std(r) + eps)

The baseline does not depend on the sample itself (unbiased); see
:mod:`mrlm.train.algorithms.multi_agent` for the whole step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mrlm.train.algorithms import multi_agent
from mrlm.train.algorithms.multi_agent import MultiAgentConfig
from mrlm.train.loop import RunConfig
from mrlm.train.ops.estimators import leave_one_out_advantages
from mrlm.train.rollout.envs import EnvFactory

#: The baseline of MARLOO: the mean reward of the group's other samples.
advantages = leave_one_out_advantages


@dataclass
class MARLOOConfig(MultiAgentConfig):
    """Train several LLM agents together with MARLOO (leave-one-out baseline) on a multi-agent env;
    flags on the command line, or --config FILE (YAML, the same keys)."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/marloo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""


def train(config: MARLOOConfig, *, env: EnvFactory | None = None) -> Path:
    """Run MARLOO; return the final directory (see :func:`~mrlm.train.algorithms.multi_agent.train`)."""
    return multi_agent.train(config, advantages, env=env)
