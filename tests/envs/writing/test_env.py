"""``mrlm/Writing-v0`` in both PettingZoo APIs: checkers, determinism, rounds, rewards, plugging in."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
import mrlm.envs.writing
from mrlm.envs import EnvArgumentError, TextSpace
from mrlm.envs.play import Terminal, play
from mrlm.envs.writing import Score, WritingAECEnv, WritingEnv, WritingTask
from tests.envs.writing.texts import INTRODUCTION, INTRODUCTION_INDEX, TLDR, TLDR_INDEX

# Role names ("summary") read better than PettingZoo's suggested "player_0" style.
pytestmark = pytest.mark.filterwarnings("ignore:We recommend agents to be named:UserWarning")

ACTIONS = ["", "42", "A short line.", "Several words\non two lines, with punctuation!", "\x00\x1b[2J" * 3]


@pytest.mark.parametrize("task", ["tldr", "introduction"])
def test_checkers_pass_for_both_tasks_and_kinds(task: str) -> None:
    api_test(mrlm.envs.make("mrlm/Writing-v0", kind="aec", task=task, rounds=3), num_cycles=20)
    seed_test(lambda: mrlm.envs.make("mrlm/Writing-v0", kind="aec", task=task, rounds=3), num_cycles=10)
    parallel_api_test(mrlm.envs.make("mrlm/Writing-v0", kind="parallel", task=task, rounds=3), num_cycles=20)
    parallel_seed_test(lambda: mrlm.envs.make("mrlm/Writing-v0", kind="parallel", task=task))


def test_max_cycles_test_on_the_package() -> None:
    max_cycles_test(mrlm.envs.writing)
    env = mrlm.envs.writing.parallel_env(max_cycles=4)
    assert env.game.rounds == 4  # no rounds given: max_cycles is the episode length


def test_max_cycles_truncates_explicit_rounds() -> None:
    env = WritingEnv(rounds=5, max_cycles=2)
    env.reset(seed=0)
    env.step({"summary": "a", "expansion": "b"})
    _, _, terminations, truncations, _ = env.step({"summary": "a", "expansion": "b"})
    assert truncations == {"summary": True, "expansion": True} and not any(terminations.values())
    assert env.agents == []


def _parallel_trace(seed: int, **kwargs: Any) -> list[Any]:
    env = mrlm.envs.make("mrlm/Writing-v0", kind="parallel", **kwargs)
    trace: list[Any] = [env.reset(seed=seed)]
    step = 0
    while env.agents:
        actions = {
            agent: ACTIONS[(step + i) % len(ACTIONS)] * (step + 1) for i, agent in enumerate(env.agents)
        }
        result = env.step(actions)
        for agent, observation in result[0].items():
            assert env.observation_space(agent).contains(observation)
        trace.append(result)
        step += 1
    return trace


def _aec_trace(seed: int, **kwargs: Any) -> list[Any]:
    env = mrlm.envs.make("mrlm/Writing-v0", kind="aec", **kwargs)
    env.reset(seed=seed)
    trace: list[Any] = []
    for step, agent in enumerate(env.agent_iter()):
        observation, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(observation)
        trace.append((agent, observation, reward, terminated, truncated, info))
        env.step(None if terminated or truncated else ACTIONS[step % len(ACTIONS)])
    return trace


@pytest.mark.parametrize("task", ["tldr", "introduction"])
def test_full_episodes_are_deterministic(task: str) -> None:
    first = _parallel_trace(11, task=task, rounds=3)
    assert first == _parallel_trace(11, task=task, rounds=3)
    assert len(first) == 4  # reset and three rounds
    assert first != _parallel_trace(12, task=task, rounds=3)  # another seed, another task
    aec = _aec_trace(5, task=task, rounds=2)
    assert aec == _aec_trace(5, task=task, rounds=2)
    assert len(aec) == 2 * 2 + 2  # two rounds of two moves, then each agent's dead step


def test_seed_picks_the_task_and_options_override() -> None:
    env = WritingEnv()
    for seed in (0, 5, 11, 12, 29):
        env.reset(seed=seed)
        assert env.game.task.index == seed % 12
    _, infos = env.reset(seed=3, options={"index": 7})
    assert env.game.task.index == 7 and infos["summary"]["index"] == 7
    env.reset(seed=1)
    drawn = [env.reset()[1]["summary"]["index"] for _ in range(6)]  # unseeded resets continue the stream
    env.reset(seed=1)
    assert drawn == [env.reset()[1]["summary"]["index"] for _ in range(6)]
    with pytest.raises(ValueError, match=r"options\['index'\] must be an int in \[0, 12\)"):
        env.reset(options={"index": 12})


def test_observation_and_reset_info_describe_the_role() -> None:
    env = WritingEnv(task="introduction")
    observations, infos = env.reset(seed=INTRODUCTION_INDEX)
    text = observations["contribution"]["text"]
    assert "Your role: contribution." in text and "Length: 40-140 words." in text
    assert "Your teammate (background) writes 50-160 words." in text
    assert "=== Abstract ===\n" + env.game.task.source in text
    assert "Title: Cheap Soil Moisture Sensing for Smallholder Farms" in text
    assert infos["background"] == {
        "task": "introduction",
        "index": INTRODUCTION_INDEX,
        "origin": "builtin",
        "title": "Cheap Soil Moisture Sensing for Smallholder Farms",
        "role": "background",
        "length_band": [50, 160],
        "rounds": 1,
        "has_reference": False,
    }


def test_one_round_reward_is_the_score_with_components_in_info() -> None:
    env = WritingEnv()
    env.reset(seed=TLDR_INDEX)
    summary, expansion = TLDR["good"]
    observations, rewards, terminations, truncations, infos = env.step(
        {"summary": summary, "expansion": expansion}
    )
    assert rewards["summary"] == rewards["expansion"] > 0.6  # shared
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
    info = infos["expansion"]
    assert info["round"] == 1 and info["score"] == info["reward"] == rewards["expansion"]
    assert {"length", "ratio", "coherence", "rouge", "topicality", "fluency", "originality"} <= set(
        info["components"]
    )
    # The expansion has no hyphenated words or stray punctuation: its words are its space-separated items.
    assert info["agent_components"]["words"] == len(expansion.split()) == 137
    assert "rouge" not in info["agent_components"]
    assert "rouge1" in infos["summary"]["agent_components"]
    assert f"Team score: {rewards['summary']:.3f}" in observations["summary"]["text"]


def test_revision_rounds_show_the_teammate_and_pay_the_change_in_score() -> None:
    env = WritingEnv(rounds=3)
    observations, _ = env.reset(seed=TLDR_INDEX)
    assert "Latest part of" not in observations["summary"]["text"]
    drafts = [TLDR["repeated"], TLDR["good"], TLDR["off_topic"]]
    total, scores = 0.0, []
    for round_number, (summary, expansion) in enumerate(drafts, start=1):
        observations, rewards, terminations, _, infos = env.step({"summary": summary, "expansion": expansion})
        total += rewards["summary"]
        scores.append(infos["summary"]["score"])
        assert all(terminations.values()) == (round_number == 3)
        if round_number < 3:
            text = observations["summary"]["text"]
            assert f"=== Latest part of expansion ===\n{expansion}" in text
            assert f"=== Your previous part ===\n{summary}" in text
            assert f"Team score of the previous round: {scores[-1]:.3f}" in text
    assert scores[0] < scores[1] and scores[2] < scores[1]
    assert rewards["summary"] == pytest.approx(scores[2] - scores[1]) and rewards["summary"] < 0
    assert total == pytest.approx(scores[-1])  # the rewards add up to the final score


def test_aec_second_writer_sees_the_first_part_of_the_same_round() -> None:
    env = WritingAECEnv(task="introduction", rounds=2)
    env.reset(seed=INTRODUCTION_INDEX)
    background, contribution = INTRODUCTION["good"]
    assert env.agent_selection == "background"
    env.step(background)
    assert env.agent_selection == "contribution"
    observation, reward, *_ = env.last()
    assert f"=== Latest part of background ===\n{background}" in observation["text"] and reward == 0
    env.step(contribution)
    _, reward, terminated, _, info = env.last()  # background again, round 2: the round was scored
    assert env.agent_selection == "background" and not terminated
    assert reward == info["score"] > 0.6 and info["round"] == 1
    env.step(background)
    env.step(contribution)
    _, reward, terminated, _, info = env.last()
    assert terminated and info["round"] == 2 and reward == pytest.approx(0.0, abs=1e-12)  # same text
    rendered = env.render()
    assert rendered is None  # no render_mode


def test_render_ansi_shows_the_transcript_and_scores() -> None:
    env = WritingEnv(render_mode="ansi", rounds=2)
    env.reset(seed=0)
    env.step({"summary": "first summary", "expansion": "first expansion"})
    env.step({"summary": "second summary", "expansion": "second expansion"})
    text = env.render()
    assert isinstance(text, str)
    assert text.index("[summary]\nfirst summary") < text.index("[expansion]\nfirst expansion")
    assert (
        text.index("[score]\nround 1: ") < text.index("[summary]\nsecond summary") < text.index("round 2: ")
    )


def test_hostile_actions_through_the_env() -> None:
    env = WritingEnv(rounds=4)
    env.reset(seed=1)
    space = env.action_space("summary")
    assert isinstance(space, TextSpace)
    hostile = ["", "\x00\x01\x1b[31m" * 1000, "spam " * 13_000, "y" * space.max_length]
    for text in hostile:
        observations, rewards, _, _, _ = env.step({"summary": text, "expansion": text})
        assert all(math.isfinite(r) for r in rewards.values())
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation)
            assert len(observation["text"]) < 40_000  # parts are cut for display
        assert env.game.scores[-1].total < 0.1


class RecordingReward:
    """A custom reward: remembers its calls, pays 0.25 and reports one component."""

    def __init__(self) -> None:
        self.calls: list[tuple[WritingTask, dict[str, str]]] = []

    def __call__(self, task: WritingTask, parts: Mapping[str, str]) -> tuple[float, dict[str, float]]:
        self.calls.append((task, dict(parts)))
        return 0.25, {"custom": float(len(parts["summary"]))}


def test_a_custom_reward_function_is_used() -> None:
    reward_fn = RecordingReward()
    env = mrlm.envs.make("mrlm/Writing-v0", kind="parallel", reward_fn=reward_fn)
    env.reset(seed=4)
    _, rewards, _, _, infos = env.step({"summary": "abc", "expansion": "defg"})
    assert rewards == {"summary": 0.25, "expansion": 0.25}
    assert infos["summary"]["components"] == {"custom": 3.0} and infos["summary"]["agent_components"] == {}
    ((task, parts),) = reward_fn.calls
    assert task.index == 4 and parts == {"summary": "abc", "expansion": "defg"}


def test_a_custom_score_with_per_agent_components_reaches_each_agent() -> None:
    def per_agent(task: WritingTask, parts: Mapping[str, str]) -> Score:
        return Score(1.0, {"team": 1.0}, {agent: {"chars": len(text)} for agent, text in parts.items()})

    env = WritingAECEnv(reward_fn=per_agent)
    env.reset(seed=0)
    env.step("ab")
    env.step("abcde")
    _, reward, _, _, info = env.last()
    assert reward == 1.0 and info["agent_components"] == {"chars": 2.0}


def test_a_broken_reward_function_is_reported() -> None:
    env = WritingEnv(reward_fn=lambda task, parts: "great")  # type: ignore[arg-type]
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must return a Score"):
        env.step({"summary": "a", "expansion": "b"})


def test_length_bands_and_records_arguments(tmp_path: Path) -> None:
    path = tmp_path / "tldr.jsonl"
    row = {
        "prompt": "TITLE: Noisy fridge\n\nPOST: My fridge hums loudly at night.\n\nTL;DR:",
        "completion": "Loud fridge.",
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    env = WritingEnv(records=path, length_bands={"summary": (1, 3)})
    observations, infos = env.reset(seed=9)
    assert env.game.task.origin == "records" and infos["summary"]["length_band"] == [1, 3]
    assert "Length: 1-3 words." in observations["summary"]["text"]
    _, _, _, _, infos = env.step({"summary": "Loud fridge.", "expansion": ""})
    assert infos["summary"]["agent_components"]["length"] == 1.0
    assert infos["summary"]["agent_components"]["rougeL"] == 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"task": "poem"}, ValueError, "task must be one of tldr, introduction"),
        ({"rounds": 0}, ValueError, "rounds must be a positive int"),
        ({"length_bands": {"background": (1, 2)}}, ValueError, "the tldr agents are"),
        ({"length_bands": {"summary": (5, 2)}}, ValueError, "0 < low <= high"),
        ({"reward_fn": 3}, TypeError, "reward_fn must be callable"),
        ({"records": []}, ValueError, "empty"),
        ({"max_cycles": 0}, ValueError, "max_cycles"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        WritingEnv(**kwargs)


def test_make_checks_keyword_arguments() -> None:
    with pytest.raises(EnvArgumentError, match="has no keyword argument 'round'"):
        mrlm.envs.make("mrlm/Writing-v0", round=2)
    assert isinstance(mrlm.envs.make("mrlm/Writing-v0"), WritingEnv)  # parallel by default
    assert isinstance(mrlm.envs.make("mrlm/Writing-v0", kind="aec"), WritingAECEnv)


def test_a_person_can_play_a_seat() -> None:
    out = io.StringIO()
    summary = TLDR["good"][0]
    terminal = Terminal(stdin=io.StringIO(f"{summary}\n.\n"), stdout=out)
    totals = play("mrlm/Writing-v0", seed=0, agent="summary", terminal=terminal)
    text = out.getvalue()
    assert set(totals) == {"summary", "expansion"} and totals["summary"] == totals["expansion"]
    assert "[to summary] Task: tldr." in text and "Your reply as summary" in text
    assert "[expansion] (random)" in text and "Episode over." in text
