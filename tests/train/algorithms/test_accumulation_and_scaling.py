"""Settings the built-in trainers would silently ignore or blow up on are refused when a config is built."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.ippo import IPPOConfig
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.mareinforce import MAREINFORCEConfig, advantages
from mrlm.train.algorithms.maremax import MAReMaxConfig
from mrlm.train.algorithms.marloo import MARLOOConfig
from mrlm.train.algorithms.ppo import PPOConfig
from mrlm.train.loop import DistributedConfig
from mrlm.train.ops.credit import grouped_advantages

ACCUMULATING = DistributedConfig(gradient_accumulation_steps=4)


@pytest.mark.parametrize(
    ("build", "batching"),
    [
        (lambda **kw: GRPOConfig(env_id="mrlm/Math-v0", **kw), "GRPO splits each batch"),
        (lambda **kw: PPOConfig(env_id="mrlm/Math-v0", **kw), "PPO splits each batch into mini-batches"),
        (lambda **kw: MAGRPOConfig(env_id="mrlm/TeamSum-v0", **kw), "each policy's rows are split"),
        (lambda **kw: MARLOOConfig(env_id="mrlm/TeamSum-v0", **kw), "each policy's rows are split"),
        (lambda **kw: IPPOConfig(env_id="mrlm/TeamSum-v0", policies="per_agent", **kw), "rows are split"),
    ],
    ids=["grpo", "ppo", "magrpo", "marloo", "ippo"],  # SFT's and DPO's: in their own tests
)
def test_gradient_accumulation_the_trainer_would_ignore_is_refused(build: Any, batching: str) -> None:
    build(dist=DistributedConfig())  # the default is taken
    with pytest.raises(ValueError, match=f"{batching}.*gradient_accumulation_steps at 1 \\(got 4\\)"):
        build(dist=ACCUMULATING)


def test_mareinforce_advantages_are_never_scaled_by_the_rewards_spread() -> None:
    assert MAREINFORCEConfig(env_id="mrlm/TeamSum-v0").advantage_scaling == "none"
    for scale in ("group", "batch"):
        with pytest.raises(ValueError, match=r"no baseline to centre them.*advantage_scaling='none'"):
            MAREINFORCEConfig(env_id="mrlm/TeamSum-v0", advantage_scaling=scale)
    # Why: a group whose rewards all agree would get r / eps, ten thousand times its reward.
    rewards, groups = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0]), torch.tensor([0, 0, 0, 0, 1, 1])
    scaled = grouped_advantages(rewards, groups, advantages, scale="group")
    assert float(scaled[0]) == pytest.approx(1.0 / 1e-4)
    unscaled = grouped_advantages(rewards, groups, advantages, scale="none")
    torch.testing.assert_close(unscaled, rewards)
    # The baselines that centre the rewards keep std scaling, and give such a group 0.
    assert MAReMaxConfig(env_id="mrlm/TeamSum-v0").advantage_scaling == "group"
