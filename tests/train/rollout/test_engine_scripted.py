"""The rollout engine with a scripted env and generator: exact tokens, batching, endings, pooling."""

from __future__ import annotations

from typing import Any

import gymnasium
import pytest

from mrlm.train.chat_template import IM_END
from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import RolloutEngine, Trajectory
from tests.train.rollout.scripted import SYSTEM_PROMPT, EchoEnv, ScriptedGenerator

PARAMS = SamplingParams(max_new_tokens=16)


class CountingFactory:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.built: list[gymnasium.Env[Any, Any]] = []

    def __call__(self) -> gymnasium.Env[Any, Any]:
        env = EchoEnv(**self.kwargs)
        self.built.append(env)
        return env


def _engine(tokenizer: Any, **kwargs: Any) -> tuple[RolloutEngine, ScriptedGenerator, CountingFactory]:
    factory = CountingFactory(max_turns=kwargs.pop("env_max_turns", 3))
    generator = ScriptedGenerator(tokenizer)
    engine = RolloutEngine(factory, generator, tokenizer, PARAMS, env_id="test/Echo-v0", **kwargs)
    return engine, generator, factory


def _replay(trajectory: Trajectory, max_turns: int = 3) -> tuple[list[float], bool]:
    env = EchoEnv(max_turns=max_turns)
    env.reset(seed=trajectory.seed)
    rewards, terminated = [], False
    for message in trajectory.messages:
        if message["role"] == "assistant":
            _, reward, terminated, _, _ = env.step(message["content"])
            rewards.append(reward)
    return rewards, terminated


def test_order_groups_and_batching(tokenizer: Any) -> None:
    engine, generator, _ = _engine(tokenizer)
    trajectories = engine.collect([5, 6, 7], group_size=2)
    assert [(t.seed, t.group) for t in trajectories] == [(5, 0), (5, 0), (6, 1), (6, 1), (7, 2), (7, 2)]
    # One generate call per round, for every episode awaiting a reply (all first replies are wrong).
    assert generator.batches == [6, 6]
    assert all(t.env_id == "test/Echo-v0" for t in trajectories)
    # Group members answer the same task.
    for first, second in zip(trajectories[::2], trajectories[1::2], strict=True):
        assert first.messages[:2] == second.messages[:2]
        assert first.reset_info == second.reset_info
    assert trajectories[0].messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    # Group ids keep counting across calls.
    assert [t.group for t in engine.collect([1], group_size=2)] == [3, 3]


def test_rewards_and_endings_match_replaying_the_replies(tokenizer: Any) -> None:
    engine, _, _ = _engine(tokenizer)
    for trajectory in engine.collect([5, 6], group_size=2):
        rewards, terminated = _replay(trajectory)
        assert trajectory.turn_rewards == rewards == [0.0, 1.0]
        assert trajectory.terminated == terminated is True
        assert not trajectory.truncated and trajectory.truncation is None
        assert trajectory.final_observation == "Correct."
        assert [i["correct"] for i in trajectory.infos] == [False, True]
        assert trajectory.total_reward == 1.0


def test_tokens_are_the_template_rendering(tokenizer: Any) -> None:
    engine, _, _ = _engine(tokenizer)
    trajectories = engine.collect([5, 6], group_size=2)
    assert [t.finish_reasons for t in trajectories] == [["stop", "stop"], ["length", "stop"]] * 2
    end_id = tokenizer.convert_tokens_to_ids(IM_END)
    for trajectory in trajectories:
        rendered = tokenizer.apply_chat_template(
            trajectory.messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        ids, template_mask = rendered["input_ids"], rendered["assistant_masks"]
        # The ids stop after the last generated token; the template's closing newline is not needed.
        assert trajectory.token_ids == ids[:-1]
        expected_mask = list(template_mask[:-1])
        if trajectory.finish_reasons[0] == "length":
            # The first reply was cut: its end-of-turn token was written by the template, not the model.
            first_end = ids.index(end_id, ids.index(end_id, ids.index(end_id) + 1) + 1)
            assert template_mask[first_end] == 1
            expected_mask[first_end] = 0
        assert trajectory.mask == expected_mask
        generated = [lp for lp, m in zip(trajectory.logprobs, trajectory.mask, strict=True) if m]
        assert generated and all(lp < 0 for lp in generated)
        assert all(lp == 0 for lp, m in zip(trajectory.logprobs, trajectory.mask, strict=True) if not m)


def test_engine_turn_cap_truncates(tokenizer: Any) -> None:
    engine, _, _ = _engine(tokenizer, max_turns=1)
    for trajectory in engine.collect([5], group_size=2):
        assert trajectory.truncated and trajectory.truncation == "max_turns" and not trajectory.terminated
        assert trajectory.num_turns == 1
        assert trajectory.final_observation is not None and trajectory.final_observation.startswith("No.")
        assert trajectory.messages[-1]["role"] == "assistant"


def test_env_truncation_is_recorded(tokenizer: Any) -> None:
    generator = ScriptedGenerator(tokenizer)
    engine = RolloutEngine(
        lambda: gymnasium.wrappers.TimeLimit(EchoEnv(max_turns=3), max_episode_steps=1),
        generator,
        tokenizer,
        PARAMS,
    )
    (trajectory,) = engine.collect([5])
    assert trajectory.truncated and trajectory.truncation == "env" and trajectory.turn_rewards == [0.0]
    assert trajectory.env_id == "EchoEnv"


def test_a_prompt_too_long_ends_the_episode(tokenizer: Any) -> None:
    engine, generator, _ = _engine(tokenizer)
    (opening,) = engine.collect([5])
    first_prompt = opening.mask.index(1)
    first_reply_end = first_prompt + opening.mask[first_prompt:].index(0)

    # Too long from the start: no reply at all, and the model is never called.
    engine, generator, _ = _engine(tokenizer, max_prompt_tokens=first_prompt - 1)
    (trajectory,) = engine.collect([5])
    assert trajectory.truncation == "prompt_too_long" and trajectory.truncated
    assert trajectory.num_turns == 0 and generator.batches == [] and sum(trajectory.mask) == 0

    # Too long after the feedback: one reply, and the feedback is kept out of the tokens.
    engine, generator, _ = _engine(tokenizer, max_prompt_tokens=first_reply_end + 3)
    (trajectory,) = engine.collect([5])
    assert trajectory.truncation == "prompt_too_long" and trajectory.num_turns == 1
    assert trajectory.final_observation is not None and trajectory.final_observation.startswith("No.")
    assert len(trajectory.token_ids) == first_reply_end
    assert trajectory.messages[-1]["role"] == "assistant"


def test_envs_are_pooled_not_shared(tokenizer: Any) -> None:
    engine, _, factory = _engine(tokenizer)
    engine.collect([1, 2], group_size=2)
    assert len(factory.built) == 4 and len({id(e) for e in factory.built}) == 4
    engine.collect([3], group_size=2)
    engine.collect([4, 5], group_size=2)
    assert len(factory.built) == 4  # reused across calls
    engine.collect([1, 2, 3], group_size=2)
    assert len(factory.built) == 6  # grown to the largest batch
    engine.close()


def test_threaded_stepping_gives_the_same_trajectories(tokenizer: Any) -> None:
    serial, _, _ = _engine(tokenizer)
    threaded, _, _ = _engine(tokenizer, step_workers=3)
    assert serial.collect([1, 2, 3], group_size=2) == threaded.collect([1, 2, 3], group_size=2)


def test_env_ids_and_bad_envs(tokenizer: Any) -> None:
    generator = ScriptedGenerator(tokenizer)
    with pytest.raises(ValueError, match="env_kwargs"):
        RolloutEngine(EchoEnv, generator, tokenizer, PARAMS, env_kwargs={"max_turns": 2})
    with pytest.raises(TypeError, match="must be a str"):
        RolloutEngine("CartPole-v1", generator, tokenizer, PARAMS).collect([0])
    with pytest.raises(KeyError, match="unknown env id"):
        RolloutEngine("mrlm/NoSuchEnv-v0", generator, tokenizer, PARAMS).collect([0])
    with pytest.raises(ValueError, match="group_size"):
        RolloutEngine(EchoEnv, generator, tokenizer, PARAMS).collect([0], group_size=0)
