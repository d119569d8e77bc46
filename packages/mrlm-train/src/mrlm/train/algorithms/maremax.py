"""MAReMax: multi-agent ReMax, each sample compared with the best of its agent's group.

For the ``G`` samples of one agent on one task, with credited rewards ``r_1..r_G``::

    A_i = (r_i - max_j r_j) / (std(r) + eps)

Every advantage is ``<= 0``: the best samples are left alone, the others pushed down by how far
they fall short. See :mod:`mrlm.train.algorithms.multi_agent` for the whole step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mrlm.train.algorithms import multi_agent
from mrlm.train.algorithms.multi_agent import MultiAgentConfig
from mrlm.train.loop import RunConfig
from mrlm.train.ops.estimators import max_baseline_advantages
from mrlm.train.rollout.envs import EnvFactory

#: The baseline of MAReMax: the group's best reward.
advantages = max_baseline_advantages


@dataclass
class MAReMaxConfig(MultiAgentConfig):
    """Train several LLM agents together with MAReMax (best-of-group baseline) on a multi-agent env;
    flags on the command line, or --config FILE (YAML, the same keys)."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/maremax", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""


def train(config: MAReMaxConfig, *, env: EnvFactory | None = None) -> Path:
    """Run MAReMax; return the final directory (see :func:`~mrlm.train.algorithms.multi_agent.train`)."""
    return multi_agent.train(config, advantages, env=env)
