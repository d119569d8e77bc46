"""``mrlm/TeamSum-v0``: the checkers in both APIs, seeding, the team's reward by hand, hostile replies,
demonstrations, larger teams, arguments, and the env served over the wire."""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Mapping
from typing import Any

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
import mrlm.envs.team_sum
from mrlm.envs.remote import RemoteParallelEnv
from mrlm.envs.server import serve
from mrlm.envs.team_sum import (
    AGENT_NAMES,
    Part,
    TeamSumAECEnv,
    TeamSumEnv,
    judge,
    parse_value,
    system_prompt,
)
from mrlm.envs.team_sum.game import CORRECT, WRONG

# The package's ``env`` is PettingZoo's factory; the module of the same name is reached by import.
team_sum_env = importlib.import_module("mrlm.envs.team_sum.env")

ID = "mrlm/TeamSum-v0"

#: Replies that must never crash the env, and never earn a value.
HOSTILE = [
    "",
    "8",  # the right number, but not in a box
    "The answer is 8.",
    "\\boxed{}",
    "\\boxed{eight}",
    "\\boxed{8.5}",
    "\\boxed{1/2}",
    "\\boxed{{8}}",  # nested braces: the box holds "{8}", not a number
    "\\boxed{8",  # never closed
    "\\boxed{" * 5_000,
    "}" * 10_000 + "\\boxed{" * 100,
    "\\boxed{٨}",  # an Arabic-Indic digit is not an ASCII integer
    "\\boxed{８}",  # a full-width digit neither  # noqa: RUF001
    "\\boxed{" + "9" * 5_000 + "}",  # more digits than Python reads into an int by default
    "\\boxed{1e3}",
    "\\boxed{NaN}",
    "\\boxed{inf}",
    "\x00\x1b[2J\ud800" * 1_000,  # control characters and a lone surrogate
    "🙂" * 20_000,
    "x" * 65_536,  # as long as the action space allows
]


def _reset(env: Any, seed: int) -> dict[str, Part]:
    env.reset(seed=seed)
    return dict(env.unwrapped.parts)


def _step(env: TeamSumEnv, replies: Mapping[str, str]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    _, rewards, terminations, truncations, infos = env.step(dict(replies))
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
    return rewards, infos


# The official checkers --------------------------------------------------------------------------------


@pytest.mark.parametrize("num_agents", [2, 3, 4])
def test_checkers_pass_in_both_apis(num_agents: int) -> None:
    kwargs: dict[str, Any] = {"num_agents": num_agents, "operations": ["+", "-"]}
    api_test(mrlm.envs.make(ID, kind="aec", **kwargs), num_cycles=20)
    seed_test(lambda: mrlm.envs.make(ID, kind="aec", **kwargs), num_cycles=10)
    parallel_api_test(mrlm.envs.make(ID, kind="parallel", **kwargs), num_cycles=20)
    parallel_seed_test(lambda: mrlm.envs.make(ID, kind="parallel", **kwargs))


def test_the_docstring_examples_run_as_written() -> None:
    outcome = doctest.testmod(team_sum_env, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0


def test_registered_with_parallel_as_the_default_kind() -> None:
    entry = mrlm.envs.env_entry(ID)
    assert entry.kinds == ("parallel", "aec") and entry.multi_agent
    assert isinstance(mrlm.envs.make(ID), TeamSumEnv)
    assert isinstance(mrlm.envs.make(ID, kind="aec").unwrapped, TeamSumAECEnv)


def test_max_cycles_test_on_the_package() -> None:
    max_cycles_test(mrlm.envs.team_sum)
    assert mrlm.envs.team_sum.parallel_env(max_cycles=3).rules.rounds == 3  # as in PettingZoo
    assert mrlm.envs.make(ID).unwrapped.rules.rounds == 1  # one joint reply by default


def test_each_round_deals_new_parts_and_is_paid_on_its_own() -> None:
    env = mrlm.envs.make(ID, rounds=2)
    first = _reset(env, 3)
    observations, rewards, terminations, _, infos = env.step(
        {agent: env.demonstration(agent) for agent in env.agents}
    )
    assert rewards == {"first": 1.0, "second": 1.0} and terminations == {"first": False, "second": False}
    assert infos["first"]["answer"] == first["first"].value  # the round just judged
    second = dict(env.parts)
    assert observations["first"]["text"] == f"{CORRECT}\n\n{second['first'].question}"
    observations, rewards, terminations, _, infos = env.step(dict.fromkeys(env.agents, "\\boxed{-1000}"))
    assert rewards == {"first": 0.0, "second": 0.0} and terminations == {"first": True, "second": True}
    assert infos["second"]["answer"] == second["second"].value and observations["first"]["text"] == WRONG
    assert env.agents == []
    # The same seed deals the same parts in every round.
    again = mrlm.envs.make(ID, rounds=2)
    assert _reset(again, 3) == first
    again.step({agent: again.demonstration(agent) for agent in again.agents})
    assert again.parts == second


def test_max_cycles_truncates_explicit_rounds() -> None:
    env = mrlm.envs.make(ID, rounds=5, max_cycles=2)
    env.reset(seed=0)
    env.step(dict.fromkeys(env.agents, ""))
    _, _, terminations, truncations, _ = env.step(dict.fromkeys(env.agents, ""))
    assert truncations == {"first": True, "second": True} and not any(terminations.values())
    with pytest.raises(ValueError, match="rounds must be a positive int"):
        mrlm.envs.make(ID, rounds=0)


# Seeding ----------------------------------------------------------------------------------------------


def test_a_seed_fixes_every_part_and_observation() -> None:
    first, second = mrlm.envs.make(ID, operations=["+", "-"]), mrlm.envs.make(ID, operations=["+", "-"])
    for seed in range(20):
        assert first.reset(seed=seed) == second.reset(seed=seed)
        assert first.parts == second.parts
    assert len({tuple(_reset(first, seed).values()) for seed in range(20)}) > 10


def test_both_kinds_deal_the_same_parts_for_a_seed() -> None:
    parallel, aec = mrlm.envs.make(ID, num_agents=3), mrlm.envs.make(ID, kind="aec", num_agents=3)
    for seed in (0, 1, 99):
        parts = _reset(parallel, seed)
        assert _reset(aec, seed) == parts
        assert {agent: aec.observe(agent)["text"] for agent in parts} == {
            agent: part.question for agent, part in parts.items()
        }


def test_an_unseeded_reset_continues_the_seeded_stream() -> None:
    env = mrlm.envs.make(ID)
    env.reset(seed=5)
    after = [_reset_unseeded(env) for _ in range(5)]
    env.reset(seed=5)
    assert [_reset_unseeded(env) for _ in range(5)] == after
    assert len(set(after)) > 1


def _reset_unseeded(env: TeamSumEnv) -> tuple[Part, ...]:
    env.reset()
    return tuple(env.parts.values())


def test_parts_stay_within_the_arguments() -> None:
    env = mrlm.envs.make(ID, num_agents=4, low=10, high=12, operations=["-"])
    for seed in range(50):
        observations, _ = env.reset(seed=seed)
        for agent, part in env.parts.items():
            assert 10 <= part.x <= 12 and 10 <= part.y <= 12 and part.op == "-"
            assert part.value == part.x - part.y
            assert observations[agent]["text"] == f"What is {part.x} - {part.y}?"
    env = mrlm.envs.make(ID, low=7, high=7, operations="+")  # one operator may be a bare string
    assert set(_reset(env, 0).values()) == {Part(7, "+", 7, 14)}


def test_observations_ask_as_math_v0_asks_and_reset_infos_hold_the_system_prompt() -> None:
    env = mrlm.envs.make(ID, num_agents=3)
    observations, infos = env.reset(seed=0)
    for agent, part in env.parts.items():
        assert observations[agent]["text"] == f"What is {part.x} + {part.y}?"
        assert infos[agent] == {"system_prompt": system_prompt(3)}
    prompt = system_prompt(3)
    assert "team of 3" in prompt and "sum of every member's value" in prompt and "\\boxed{answer}" in prompt


# The team's reward, worked by hand --------------------------------------------------------------------

PARTS = {"first": Part(3, "+", 5, 8), "second": Part(2, "+", 4, 6)}  # the team's answer is 14

REWARD_TABLE = [
    # (first's reply, second's reply, given values, team_given, reward)
    ("3 + 5 = 8. \\boxed{8}", "\\boxed{6}", (8, 6), 14, 1.0),  # both right
    ("\\boxed{8}", "\\boxed{7}", (8, 7), 15, 0.0),  # one wrong
    ("\\boxed{9}", "\\boxed{5}", (9, 5), 14, 1.0),  # errors that cancel: the sum is judged
    ("\\boxed{14}", "\\boxed{0}", (14, 0), 14, 1.0),  # one member carrying the sum is judged the same
    ("8", "\\boxed{6}", (None, 6), None, 0.0),  # a missing box: no value, whatever the number
    ("\\boxed{8}", "\\boxed{3}\nso \\boxed{6}", (8, 6), 14, 1.0),  # several boxes: the last counts
    ("\\boxed{-8}", "\\boxed{22}", (-8, 22), 14, 1.0),  # negative values are values
    ("\\boxed{8.0}", "\\boxed{\\frac{12}{2}}", (8, 6), 14, 1.0),  # exact integers in other forms
    ("\\boxed{8.5}", "\\boxed{5.5}", (None, None), None, 0.0),  # non-integers give no value
]


@pytest.mark.parametrize(("first", "second", "given", "team_given", "reward"), REWARD_TABLE)
def test_the_team_reward_by_hand(
    first: str, second: str, given: tuple[int | None, int | None], team_given: int | None, reward: float
) -> None:
    verdict = judge(PARTS, {"first": first, "second": second}, correct_reward=1.0, format_reward=0.0)
    assert dict(verdict.given) == {"first": given[0], "second": given[1]}
    assert verdict.team_answer == 14 and verdict.team_given == team_given
    assert verdict.reward == reward and verdict.correct == (reward == 1.0)


def test_format_and_correct_rewards_add_as_in_math_v0() -> None:
    def reward(first: str, second: str) -> float:
        replies = {"first": first, "second": second}
        return judge(PARTS, replies, correct_reward=2.0, format_reward=0.25).reward

    assert reward("\\boxed{8}", "\\boxed{6}") == 2.25  # right, and every value boxed
    assert reward("\\boxed{8}", "\\boxed{7}") == 0.25  # wrong, but every value boxed
    assert reward("\\boxed{8}", "6") == 0.0  # a value missing: neither


def test_the_env_rewards_every_member_the_same_and_reports_each_value() -> None:
    env = mrlm.envs.make(ID)
    parts = _reset(env, 3)
    first, second = parts["first"], parts["second"]
    rewards, infos = _step(env, {"first": f"\\boxed{{{first.value + 1}}}", "second": "no idea"})
    assert rewards == {"first": 0.0, "second": 0.0}
    assert infos["first"] == {
        "answer": first.value,
        "given": first.value + 1,
        "team_answer": first.value + second.value,
        "team_given": None,
        "correct": False,
    }
    assert infos["second"]["given"] is None and infos["second"]["answer"] == second.value
    _reset(env, 3)
    rewards, infos = _step(
        env, {"first": f"\\boxed{{{first.value + 1}}}", "second": f"\\boxed{{{second.value - 1}}}"}
    )
    assert rewards == {"first": 1.0, "second": 1.0}  # the errors cancel
    assert infos["second"]["team_given"] == infos["second"]["team_answer"]


def test_the_final_observation_says_whether_the_team_was_right_without_the_answer() -> None:
    env = mrlm.envs.make(ID)
    parts = _reset(env, 0)
    right = {agent: env.demonstration(agent) for agent in parts}
    observations, *_ = env.step(right)
    assert observations["first"]["text"].startswith("Correct")
    _reset(env, 0)
    observations, *_ = env.step({"first": "\\boxed{1000}", "second": right["second"]})
    assert observations["second"]["text"].startswith("Not correct")
    assert str(sum(p.value for p in parts.values())) not in observations["second"]["text"]
    _reset(env, 0)
    observations, *_ = env.step({"first": "", "second": right["second"]})
    assert "\\boxed{}" in observations["first"]["text"]


# Hostile replies --------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_reply_gives_no_value_and_the_next_episode_is_healthy(reply: str) -> None:
    assert parse_value(reply) is None
    env = mrlm.envs.make(ID)
    _reset(env, 11)
    rewards, infos = _step(env, {"first": reply, "second": env.demonstration("second")})
    assert rewards == {"first": 0.0, "second": 0.0} and infos["first"]["given"] is None
    _reset(env, 12)
    rewards, _ = _step(env, {agent: env.demonstration(agent) for agent in env.agents})
    assert rewards == {"first": 1.0, "second": 1.0}


def test_hostile_replies_in_the_turn_based_form() -> None:
    env = mrlm.envs.make(ID, kind="aec", num_agents=3)
    env.reset(seed=0)
    for index, _agent in enumerate(env.agent_iter()):
        *_, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else HOSTILE[index])
    assert env.unwrapped.game.verdict.reward == 0.0


# Demonstrations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_agents", [2, 3, 4])
def test_demonstrations_earn_the_reward_for_every_seed(num_agents: int) -> None:
    env = mrlm.envs.make(ID, num_agents=num_agents, low=0, high=99, operations=["+", "-"])
    for seed in range(100):
        parts = _reset(env, seed)
        replies = {agent: env.demonstration(agent) for agent in parts}
        for agent, part in parts.items():
            assert replies[agent] == f"{part.x} {part.op} {part.y} = {part.value}. \\boxed{{{part.value}}}"
        rewards, infos = _step(env, replies)
        assert set(rewards.values()) == {1.0}, seed
        assert all(infos[agent]["given"] == part.value for agent, part in parts.items())


def test_demonstrations_earn_the_reward_in_the_turn_based_form() -> None:
    env = mrlm.envs.make(ID, kind="aec", num_agents=4, operations=["-"])
    for seed in range(30):
        env.reset(seed=seed)
        rewards = {}
        for agent in env.agent_iter():
            _, reward, terminated, truncated, _ = env.last()
            if terminated or truncated:
                rewards[agent] = reward
            env.step(None if terminated or truncated else env.unwrapped.demonstration(agent))
        assert rewards == dict.fromkeys(AGENT_NAMES, 1.0)


def test_demonstration_is_the_documented_format() -> None:
    assert Part(3, "+", 5, 8).demonstration == "3 + 5 = 8. \\boxed{8}"
    assert Part(3, "-", 5, -2).demonstration == "3 - 5 = -2. \\boxed{-2}"
    assert Part(3, "+", 5, 8) == (3, "+", 5, 8)
    env = mrlm.envs.make(ID)
    with pytest.raises(RuntimeError, match="reset"):
        _ = env.parts


# Larger teams -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_agents", [3, 4])
def test_larger_teams_need_every_member(num_agents: int) -> None:
    env = mrlm.envs.make(ID, num_agents=num_agents)
    parts = _reset(env, 4)
    assert env.possible_agents == list(AGENT_NAMES[:num_agents]) == list(parts)
    replies = {agent: env.demonstration(agent) for agent in parts}
    last = AGENT_NAMES[num_agents - 1]
    rewards, infos = _step(env, {**replies, last: "\\boxed{-1000}"})
    assert rewards == dict.fromkeys(parts, 0.0)
    assert infos["first"]["team_answer"] == sum(part.value for part in parts.values())
    _reset(env, 4)
    rewards, _ = _step(env, replies)
    assert rewards == dict.fromkeys(parts, 1.0)


def test_the_transcript_shows_every_reply_and_the_result() -> None:
    env = mrlm.envs.make(ID, num_agents=3, render_mode="ansi")
    parts = _reset(env, 0)
    env.step({agent: env.demonstration(agent) for agent in parts})
    text = env.render()
    total = sum(part.value for part in parts.values())
    assert all(env.demonstration(agent) in text for agent in parts)
    assert f"[team]\ngiven {total}, answer {total}: reward 1" in text


# Arguments --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_agents": 1}, "num_agents"),
        ({"num_agents": 5}, "num_agents"),
        ({"num_agents": True}, "num_agents"),
        ({"low": -1}, "low"),
        ({"high": 100}, "high"),
        ({"low": 5, "high": 4}, "low must not exceed high"),
        ({"operations": []}, "operations"),
        ({"operations": ["*"]}, "operations"),
        ({"correct_reward": float("nan")}, "correct_reward"),
        ({"format_reward": "1"}, "format_reward"),
    ],
)
def test_bad_arguments_are_value_errors_naming_the_argument(kwargs: dict[str, Any], message: str) -> None:
    for kind in ("parallel", "aec"):
        with pytest.raises(ValueError, match=message):
            mrlm.envs.make(ID, kind=kind, **kwargs)


def test_client_arguments_are_bounded() -> None:
    from mrlm.envs._builtin import TEAM_SUM_ARGS
    from mrlm.envs.server.client_args import Allowances, ArgumentRefused

    allowed = {"num_agents": 4, "low": 0, "high": 99, "operations": ["+", "-"], "format_reward": 0.1}
    assert TEAM_SUM_ARGS.check(allowed, defaults={}, allowances=Allowances()) == allowed
    for hostile in ({"num_agents": 10**9}, {"high": 1000}, {"operations": ["**"]}, {"correct_reward": 1e9}):
        with pytest.raises(ArgumentRefused, match=next(iter(hostile))):
            TEAM_SUM_ARGS.check(hostile, defaults={}, allowances=Allowances())


# Over the wire ----------------------------------------------------------------------------------------


def test_served_env_passes_the_checker_and_plays_as_the_local_one() -> None:
    kwargs: dict[str, Any] = {"num_agents": 3, "operations": ["+", "-"]}
    with serve(envs=(ID,), host="127.0.0.1", port=0) as server:
        remote = RemoteParallelEnv(server.address, ID, **kwargs)
        try:
            parallel_api_test(remote, num_cycles=10)
            local = mrlm.envs.make(ID, **kwargs)
            for seed in (0, 1):
                assert remote.reset(seed=seed) == local.reset(seed=seed)
                replies = {agent: local.demonstration(agent) for agent in local.agents}
                assert remote.step(replies) == local.step(replies)
        finally:
            remote.close()
