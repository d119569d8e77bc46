"""Rewards reach the trainer as float32 numbers, or the run stops naming the env and the value."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
import torch

from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import EnvOutputError, RewardOverflowError, RolloutEngine, Trajectory
from mrlm.train.rollout.batch import reward_tensor
from tests.train.rollout.scripted import EchoEnv, ScriptedGenerator


class _PaysWith(EchoEnv):
    """EchoEnv whose every step pays ``reward`` as it is, whatever its type."""

    def __init__(self, reward: Any) -> None:
        super().__init__()
        self.reward = reward

    def step(self, action: str) -> tuple[str, Any, bool, bool, dict[str, Any]]:
        observation, _, _, truncated, info = super().step(action)
        return observation, self.reward, True, truncated, info


def _collect(tokenizer: Any, reward: Any) -> list[Trajectory]:
    return _play(tokenizer, lambda: _PaysWith(reward), "test/Pays-v0")


def _play(tokenizer: Any, make_env: Any, env_id: str) -> list[Trajectory]:
    """One episode of the env ``make_env`` builds, under ``env_id``."""
    engine = RolloutEngine(
        make_env, ScriptedGenerator(tokenizer), tokenizer, SamplingParams(max_new_tokens=16), env_id=env_id
    )
    with engine:
        return engine.collect([1])


@pytest.mark.parametrize("reward", [1, 0.5, np.float32(0.25), np.int64(2), torch.tensor(3.0), True])
def test_numbers_of_any_kind_are_rewards(tokenizer: Any, reward: Any) -> None:
    assert _collect(tokenizer, reward)[0].turn_rewards == [float(reward)]


@pytest.mark.parametrize(
    ("reward", "shown"), [(None, "None (NoneType)"), ("1.0", "'1.0' (str)"), ([1.0], "[1.0] (list)")]
)
def test_a_reward_that_is_no_number_names_the_env(tokenizer: Any, reward: Any, shown: str) -> None:
    with pytest.raises(EnvOutputError) as info:
        _collect(tokenizer, reward)
    assert str(info.value) == (
        f"env 'test/Pays-v0' returned the reward {shown} from step(); rewards must be numbers (int or float)"
    )


def _trajectory(reward: float) -> Trajectory:
    return Trajectory(
        env_id="test/Pays-v0",
        seed=3,
        group=0,
        messages=[],
        token_ids=[1],
        mask=[0],
        logprobs=[0.0],
        turn_rewards=[reward],
    )


@pytest.mark.parametrize("reward", [1e39, -1e39])
def test_a_finite_reward_beyond_float32_is_an_overflow(reward: float) -> None:
    with pytest.raises(
        RewardOverflowError,
        match=r"env 'test/Pays-v0' paid a total reward of -?1e\+39 \(seed 3\), which overflows float32",
    ):
        reward_tensor([_trajectory(0.0), _trajectory(reward)])


def test_float32_range_nan_and_infinity_pass_through() -> None:
    largest = float(torch.finfo(torch.float32).max)
    rewards = reward_tensor([_trajectory(largest), _trajectory(math.nan), _trajectory(-math.inf)])
    assert rewards.dtype == torch.float32
    assert float(rewards[0]) == largest and math.isnan(rewards[1]) and rewards[2] == -math.inf


class _Returns(EchoEnv):
    """EchoEnv whose reset and step return what ``odd`` says instead of the API's tuples."""

    def __init__(self, odd: str) -> None:
        super().__init__()
        self.odd = odd

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        observation, info = super().reset(seed=seed, options=options)
        return {"bare": observation, "no-info": (observation, None)}.get(self.odd, (observation, info))

    def step(self, action: str) -> Any:
        observation, reward, _, truncated, info = super().step(action)
        odd = {
            "old-gym-step": (observation, reward, True, info),
            "step-info": (observation, reward, True, truncated, None),
            "yes": (observation, reward, "yes", truncated, info),
        }
        return odd.get(self.odd, (observation, reward, True, truncated, info))


@pytest.mark.parametrize(
    ("odd", "message"),
    [
        ("bare", "reset returned str; it must return (observation, info)"),
        ("no-info", "the info of reset is a NoneType, not a dict"),
        (
            "old-gym-step",
            "step returned a tuple of 4; it must return (observation, reward, terminated, truncated, info)",
        ),
        ("step-info", "the info of step is a NoneType, not a dict"),
        ("yes", "terminated is 'yes', not a bool"),  # bool("yes") would end the episode
    ],
)
def test_an_env_of_another_api_shape_is_named(tokenizer: Any, odd: str, message: str) -> None:
    with pytest.raises(EnvOutputError) as raised:
        _play(tokenizer, lambda: _Returns(odd), "test/Odd-v0")
    assert str(raised.value) == f"env 'test/Odd-v0': {message}"


@pytest.mark.parametrize(("odd", "shape"), [("bare", "str"), ("no-info", "(str, NoneType)")])
def test_a_training_command_names_a_reset_of_another_shape_before_any_model_loads(
    odd: str, shape: str
) -> None:
    from mrlm.train.rollout.envs import started_env
    from mrlm.train.rollout.errors import EnvFailedError

    with (
        pytest.raises(
            EnvFailedError, match=rf"reset returned {re.escape(shape)}; it must return \(observation, info\)"
        ),
        started_env(lambda: _Returns(odd), "test/Odd-v0", seed=0),
    ):
        pass
