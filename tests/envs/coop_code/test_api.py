"""CoopCode-v0 under PettingZoo's checkers with other arguments than the defaults, full-episode
determinism, the turn-based form, ``max_cycles`` and ``mrlm-envs play``."""

from __future__ import annotations

import io
from typing import Any

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
import mrlm.envs.coop_code
from mrlm.envs.coop_code.env import CoopCodeAECEnv, CoopCodeEnv
from mrlm.envs.play import Terminal, play
from tests.envs.coop_code.replies import HELPER, MAIN, MAIN_OFF_BY_ONE, TASK, fenced, team
from tests.envs.coop_code.test_records import HUMANEVAL

pytestmark = pytest.mark.filterwarnings("ignore:We recommend agents to be named:UserWarning")

#: Replies cycled through in the determinism rollouts: code, prose, nothing, a syntax error.
REPLIES = [fenced(HELPER), "42", "", "I do not know.\nMaybe 3/4?", fenced(MAIN_OFF_BY_ONE), "def f(:"]


@pytest.mark.parametrize(
    "kwargs",
    [{"num_agents": 3, "max_turns": 3}, {"records": [HUMANEVAL], "weights": {"uses": 0.5}}],
    ids=["three agents", "records"],
)
def test_checkers_pass_with_other_arguments(make_env: Any, make_aec: Any, kwargs: dict[str, Any]) -> None:
    parallel_api_test(make_env(**kwargs), num_cycles=10)
    parallel_seed_test(lambda: make_env(**kwargs))
    api_test(make_aec(**kwargs), num_cycles=10)
    seed_test(lambda: make_aec(**kwargs), num_cycles=10)


def test_max_cycles_test_on_the_module() -> None:
    max_cycles_test(mrlm.envs.coop_code)


def test_max_cycles_truncates_and_max_turns_none_needs_it(make_env: Any) -> None:
    env = make_env(max_turns=None, max_cycles=2)
    env.reset(seed=0)
    env.step(dict.fromkeys(env.agents, ""))
    _, _, terminations, truncations, _ = env.step(dict.fromkeys(env.agents, ""))
    assert truncations == {"helper": True, "main": True} and terminations == {"helper": False, "main": False}
    with pytest.raises(ValueError, match="max_turns=None needs max_cycles"):
        make_env(max_turns=None)
    with pytest.raises(ValueError, match="max_turns must be"):
        make_env(max_turns=0)
    with pytest.raises(ValueError, match="num_agents must be"):
        make_env(num_agents=1)
    with pytest.raises(ValueError, match="no built-in problem has 4 parts"):
        make_env(num_agents=4)


def _parallel_trace(env: CoopCodeEnv, seed: int) -> list[Any]:
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


def _aec_trace(env: CoopCodeAECEnv, seed: int) -> list[Any]:
    env.reset(seed=seed)
    trace: list[Any] = []
    for step, agent in enumerate(env.agent_iter()):
        observation, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(observation)
        trace.append((agent, observation, reward, terminated, truncated, info))
        env.step(None if terminated or truncated else REPLIES[step % len(REPLIES)])
    return trace


@pytest.mark.parametrize("num_agents", [2, 3])
def test_full_episodes_are_deterministic_and_observations_in_space(
    make_env: Any, make_aec: Any, num_agents: int
) -> None:
    for seed in (0, 5):
        first = _parallel_trace(make_env(num_agents=num_agents, max_turns=3), seed)
        assert first == _parallel_trace(make_env(num_agents=num_agents, max_turns=3), seed)
        assert len(first) == 4  # nobody solves it: the turn budget ends the episode
        assert _aec_trace(make_aec(num_agents=num_agents), seed) == _aec_trace(
            make_aec(num_agents=num_agents), seed
        )
    tasks = {make_env(num_agents=num_agents).reset(seed=seed)[1]["main"]["task_id"] for seed in range(20)}
    assert len(tasks) > 1


def test_seed_and_options_choose_the_task(make_env: Any) -> None:
    env = make_env()
    ids = [env.reset(seed=seed)[1]["helper"]["task_id"] for seed in range(10)]
    assert ids == [env.reset(seed=seed)[1]["helper"]["task_id"] for seed in range(10)]
    assert env.reset(options={"index": 3})[1]["main"]["task_id"] == env.game.tasks[3].task_id
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(ValueError, match=r"options\['index'\] must be"):
        env.reset(options={"index": 99})


def test_turn_based_form_shows_drafts_and_rewards_everyone_at_the_end_of_the_round(make_aec: Any) -> None:
    env = make_aec(max_turns=2)
    env.reset(seed=0, options=TASK)
    assert env.agent_selection == "helper"
    assert env.infos["main"]["function"] == "digital_root"
    env.step(fenced(HELPER))
    observation, reward, _, _, info = env.last()
    assert env.agent_selection == "main" and reward == 0.0
    assert "Your teammates have already written this round:\n- `helper` (digit_sum):" in observation["text"]
    assert "return sum(int(digit) for digit in str(n))" in observation["text"]
    assert info["function"] == "digital_root"  # still the reset info: nothing judged yet
    env.step(fenced(MAIN_OFF_BY_ONE))
    observation, reward, terminated, _, info = env.last()  # the helper's turn again
    assert env.agent_selection == "helper" and terminated is False
    assert reward == pytest.approx(0.5 + 0.5 * 5 / 6) and info["passed"] == 5
    assert "Your teammates have already written" not in observation["text"]
    env.step(fenced(HELPER))
    env.step(fenced(MAIN))
    _, reward, terminated, _, info = env.last()
    assert terminated is True and info["all_passed"] is True
    assert reward == pytest.approx(1.0 - (0.5 + 0.5 * 5 / 6))
    for _ in env.agent_iter():
        env.step(None)
    assert env.agents == []


def test_registered_id_builds_both_forms() -> None:
    parallel = mrlm.envs.make("mrlm/CoopCode-v0", num_agents=3)
    assert isinstance(parallel, CoopCodeEnv) and parallel.possible_agents == ["helper_1", "helper_2", "main"]
    aec = mrlm.envs.make("mrlm/CoopCode-v0", kind="aec", max_turns=1)
    assert isinstance(aec, CoopCodeAECEnv)
    with pytest.raises(mrlm.envs.EnvArgumentError, match="has no keyword argument 'max_turn'"):
        mrlm.envs.make("mrlm/CoopCode-v0", max_turn=1)


def test_render_shows_the_transcript(make_env: Any) -> None:
    env = make_env(render_mode="ansi")
    env.reset(seed=0, options=TASK)
    env.step(team(HELPER, MAIN))
    assert env.render() == f"[helper]\n{fenced(HELPER)}\n[main]\n{fenced(MAIN)}\n"


def test_a_person_can_play_main_from_a_terminal() -> None:
    typed = f"```python\n{MAIN}```\n.\n"
    out = io.StringIO()
    totals = play(
        "mrlm/CoopCode-v0",
        seed=0,
        agent="main",
        env_kwargs={"max_turns": 1},
        terminal=Terminal(stdin=io.StringIO(typed), stdout=out),
    )
    text = out.getvalue()
    assert "[to main] You are `main` in a team of 2 programmers" in text
    assert "[helper] (random)" in text and "Episode over. Total rewards:" in text
    assert set(totals) == {"helper", "main"} and totals["helper"] == totals["main"]
