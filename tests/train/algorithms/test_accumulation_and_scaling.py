"""Settings the built-in trainers would silently ignore or blow up on are refused when a config is built."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.ippo import IPPOConfig
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.marloo import MARLOOConfig
from mrlm.train.algorithms.ppo import PPOConfig
from mrlm.train.loop import DistributedConfig

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
