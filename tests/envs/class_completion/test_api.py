"""ClassCompletion-v0 under PettingZoo's checkers with other arguments than the defaults, full-episode
determinism, the turn-based form, ``max_cycles`` and ``mrlm-envs play``."""

from __future__ import annotations

import io
from typing import Any

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
import mrlm.envs.class_completion
from mrlm.envs.class_completion import builtin_records
from mrlm.envs.class_completion.env import ClassCompletionAECEnv, ClassCompletionEnv
from mrlm.envs.play import Terminal, play
from tests.envs.class_completion.replies import SEED, SOLUTIONS, TASK, methods
from tests.envs.class_completion.test_classeval import RECORD

#: Replies cycled through in the determinism rollouts: methods, prose, nothing, broken code.
REPLIES = [
    methods(["add_item"]),
    "42",
    "",
    "I do not know.\nMaybe 3/4?",
    methods(["quantity", "most_stocked"]),
    "def f(:",
]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_agents": 3, "assignment": "agents", "max_turns": 3},
        {"records": [RECORD], "assignment": "env", "idle_penalty": 0.0},
    ],
    ids=["three agents claiming", "records"],
)
def test_checkers_pass_with_other_arguments(make_env: Any, make_aec: Any, kwargs: dict[str, Any]) -> None:
    parallel_api_test(make_env(**kwargs), num_cycles=10)
    parallel_seed_test(lambda: make_env(**kwargs))
    api_test(make_aec(**kwargs), num_cycles=10)
    seed_test(lambda: make_aec(**kwargs), num_cycles=10)


def test_max_cycles_test_on_the_module() -> None:
    max_cycles_test(mrlm.envs.class_completion)


def _parallel_trace(env: ClassCompletionEnv, seed: int) -> list[Any]:
    trace: list[Any] = [env.reset(seed=seed)]
    step = 0
    while env.agents:
        actions = {agent: REPLIES[(step + i) % len(REPLIES)] for i, agent in enumerate(env.agents)}
        result = env.step(actions)
        for agent, observation in result[0].items():
            assert env.observation_space(agent).contains(observation)
        trace.append(result)
        step += 1
    return trace


def _aec_trace(env: ClassCompletionAECEnv, seed: int) -> list[Any]:
    env.reset(seed=seed)
    trace: list[Any] = []
    for step, agent in enumerate(env.agent_iter()):
        observation, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(observation)
        trace.append((agent, observation, reward, terminated, truncated, info))
        env.step(None if terminated or truncated else REPLIES[step % len(REPLIES)])
    return trace


@pytest.mark.parametrize("assignment", ["env", "agents"])
def test_full_episodes_are_deterministic_and_observations_in_space(
    make_env: Any, make_aec: Any, assignment: str
) -> None:
    for seed in (0, 3):
        kwargs = {"assignment": assignment, "max_turns": 3, "num_agents": 3}
        first = _parallel_trace(make_env(**kwargs), seed)
        assert first == _parallel_trace(make_env(**kwargs), seed)
        assert len(first) == 4
        assert _aec_trace(make_aec(**kwargs), seed) == _aec_trace(make_aec(**kwargs), seed)
    tasks = {make_env().reset(seed=seed)[1]["agent_0"]["task_id"] for seed in range(20)}
    assert len(tasks) > 1


def test_seed_and_options_choose_the_class_and_the_deal(make_env: Any) -> None:
    env = make_env()
    first = [env.reset(seed=seed)[1]["agent_0"] for seed in range(10)]
    assert first == [env.reset(seed=seed)[1]["agent_0"] for seed in range(10)]
    assert env.reset(options={"index": 2})[1]["agent_1"]["task_id"] == "mrlm-class/2"
    _, infos = make_env(assignment="agents").reset(seed=0)
    assert infos["agent_0"]["assigned"] == [] and infos["agent_0"]["assignment"] == "agents"
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "nope"})


def test_turn_based_form_shows_drafts_so_later_agents_can_pick_other_methods(make_aec: Any) -> None:
    env = make_aec(assignment="agents", max_turns=1)
    env.reset(seed=SEED, options=TASK)
    env.step(methods(["add_item", "remove_item"]))
    observation, reward, _, _, info = env.last()
    assert env.agent_selection == "agent_1" and reward == 0.0 and info["assignment"] == "agents"
    assert (
        "Your teammates have already written this round:\n- `agent_0`: `add_item`, `remove_item`"
        in observation["text"]
    )
    env.step(methods(["quantity", "most_stocked"]))
    _, reward, terminated, _, info = env.last()
    assert env.agent_selection == "agent_0" and terminated is True
    assert reward == 1.0 and info["counts"] == {"agent_0": 2, "agent_1": 2}
    rewards = {}
    for agent in env.agent_iter():
        rewards[agent] = env.last()[1]
        env.step(None)
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0} and env.agents == []


def test_registered_id_builds_both_forms() -> None:
    parallel = mrlm.envs.make("mrlm/ClassCompletion-v0", num_agents=3)
    assert isinstance(parallel, ClassCompletionEnv) and parallel.possible_agents == [
        "agent_0",
        "agent_1",
        "agent_2",
    ]
    aec = mrlm.envs.make("mrlm/ClassCompletion-v0", kind="aec", assignment="agents")
    assert isinstance(aec, ClassCompletionAECEnv)
    with pytest.raises(mrlm.envs.EnvArgumentError, match="has no keyword argument 'assign'"):
        mrlm.envs.make("mrlm/ClassCompletion-v0", assign="env")


def test_max_turns_none_needs_max_cycles(make_env: Any) -> None:
    env = make_env(max_turns=None, max_cycles=1)
    env.reset(seed=0)
    _, _, terminations, truncations, _ = env.step(dict.fromkeys(env.agents, ""))
    assert truncations == {"agent_0": True, "agent_1": True} and terminations == {
        "agent_0": False,
        "agent_1": False,
    }
    with pytest.raises(ValueError, match="max_turns=None needs max_cycles"):
        make_env(max_turns=None)
    with pytest.raises(ValueError, match="num_agents must be"):
        make_env(num_agents=1)


def test_a_person_can_play_a_seat_from_a_terminal() -> None:
    typed = methods(SOLUTIONS) + "\n.\n"  # every method: the seat's own are placed, the others dropped
    out = io.StringIO()
    totals = play(
        "mrlm/ClassCompletion-v0",
        seed=0,
        agent="agent_0",
        env_kwargs={"records": [builtin_records()[0]], "max_turns": 1},
        terminal=Terminal(stdin=io.StringIO(typed), stdout=out),
    )
    text = out.getvalue()
    assert (
        "[to agent_0] You are `agent_0` in a team of 2 programmers completing the Python class `Inventory`"
        in text
    )
    assert "[agent_1] (random)" in text and "Episode over. Total rewards:" in text
    assert text.count("agent_0, implemented") == 2 and "Dropped, owned by a teammate:" in text
    assert set(totals) == {"agent_0", "agent_1"}
