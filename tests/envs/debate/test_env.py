"""mrlm/Debate-v0 through both PettingZoo APIs: checkers, determinism, turns, rewards, hostile input."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, seed_test

import mrlm.envs
import mrlm.envs.debate
from mrlm.envs import EnvArgumentError
from mrlm.envs.core.spaces import DEFAULT_MAX_OBSERVATION_LENGTH
from mrlm.envs.debate import MOTIONS, DebateEnv, DebateParallelEnv, JudgeError, ModelJudge, RuleBasedJudge
from tests.envs.debate.scripted import (
    arguer,
    final_infos,
    off_topic,
    play_aec,
    play_parallel,
    repeater,
    silent,
    total_rewards,
)

HOSTILE = [
    "x" * 65_536,  # the longest action accepted
    "\x00\x1b[31mred\x07 alert\x7f\x9b",
    "lone surrogate \ud800 here",
    "",
    "spam " * 10_000,
    "\r\n" * 1000,
    "🙂 émoji ünïcode 中文 " * 50,
]


def _cycle(actions: list[str]) -> Any:
    """A policy that answers with ``actions`` in turn, whatever it observes."""
    state = {"i": 0}

    def act(_: str) -> str:
        state["i"] += 1
        return actions[(state["i"] - 1) % len(actions)]

    return act


# The official checkers beyond the default kwargs (tests/envs/test_conformance.py runs those) ----------


def test_checkers_pass_with_teams_and_other_round_counts() -> None:
    api_test(DebateEnv(debaters_per_side=2, rounds=3), num_cycles=30)
    api_test(DebateEnv(rounds=7), num_cycles=30)
    parallel_api_test(DebateParallelEnv(debaters_per_side=3, rounds=5), num_cycles=30)
    parallel_api_test(DebateParallelEnv(rounds=2), num_cycles=30)
    seed_test(lambda: DebateEnv(debaters_per_side=2, rounds=3), num_cycles=20)
    parallel_seed_test(lambda: DebateParallelEnv(debaters_per_side=2))


def test_max_cycles_test_on_the_package_as_a_module() -> None:
    max_cycles_test(mrlm.envs.debate)


def test_made_by_id_in_both_kinds() -> None:
    assert isinstance(mrlm.envs.make("mrlm/Debate-v0"), DebateEnv)  # aec by default
    parallel = mrlm.envs.make("mrlm/Debate-v0", kind="parallel", rounds=3, debaters_per_side=2)
    assert isinstance(parallel, DebateParallelEnv)
    assert parallel.possible_agents == ["pro_0", "con_0", "pro_1", "con_1"]
    assert isinstance(pettingzoo.make("aec", "mrlm/Debate-v0"), DebateEnv)
    assert isinstance(pettingzoo.make("parallel", "mrlm/Debate-v0", max_cycles=3), DebateParallelEnv)
    with pytest.raises(EnvArgumentError, match="'rounds'"):
        mrlm.envs.make("mrlm/Debate-v0", round=3)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="rounds must be an int >= 2"):
        DebateEnv(rounds=1)
    with pytest.raises(ValueError, match="rounds must be an int >= 2"):
        DebateParallelEnv(rounds="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="debaters_per_side"):
        DebateEnv(debaters_per_side=0)
    with pytest.raises(ValueError, match="reward_mode"):
        DebateEnv(reward_mode="winner_takes_all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_turn_chars"):
        DebateEnv(max_turn_chars=0)
    with pytest.raises(TypeError, match="judge"):
        DebateEnv(judge=object())  # type: ignore[arg-type]


# Determinism and seeding --------------------------------------------------------------------------------


def _mixed_policies(agents: list[str]) -> dict[str, Any]:
    kinds = [arguer, _cycle([*HOSTILE[1:4], "42", "I do not know.\nMaybe 3/4?"]), repeater, off_topic]
    return {agent: kinds[i % len(kinds)] for i, agent in enumerate(agents)}


@pytest.mark.parametrize("teams", [1, 2])
def test_aec_full_episodes_are_deterministic(teams: int) -> None:
    def run(seed: int) -> list[Any]:
        env = DebateEnv(debaters_per_side=teams, render_mode="ansi")
        trace = play_aec(env, _mixed_policies(env.possible_agents), seed)
        return [*trace, env.render()]

    first = run(11)
    assert first == run(11)
    assert len(first) == 4 * 2 * teams + 2 * teams + 1  # every move, every dead step, the render
    assert first != run(12)


@pytest.mark.parametrize("teams", [1, 2])
def test_parallel_full_episodes_are_deterministic(teams: int) -> None:
    def run(seed: int) -> list[Any]:
        env = DebateParallelEnv(debaters_per_side=teams, render_mode="ansi")
        return [*play_parallel(env, _mixed_policies(env.possible_agents), seed), env.render()]

    first = run(5)
    assert first == run(5)
    assert len(first) == 1 + 4 + 1  # reset, four rounds, the render
    assert first != run(6)


def test_the_seed_chooses_the_motion_and_no_global_generator_is_touched() -> None:
    env = DebateEnv()
    motions = []
    python_state, numpy_state = random.getstate(), np.random.get_state()
    for seed in range(40):
        env.reset(seed=seed)
        assert env.infos["pro"]["motion"] == MOTIONS[seed % len(MOTIONS)]
        motions.append(env.infos["pro"]["motion"])
        env.reset()  # unseeded: a draw from the env's own generator
        motions.append(env.infos["pro"]["motion"])
    assert random.getstate() == python_state
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state, strict=True))
    assert set(motions) == set(MOTIONS)
    env.reset(seed=0, options={"index": 3})
    assert env.infos["con"]["motion"] == MOTIONS[3]


def test_topics_and_the_motion_option() -> None:
    env = DebateEnv(topics=["Cats make better pets than dogs.", "Tea beats coffee."])
    seen = set()
    for seed in range(10):
        env.reset(seed=seed)
        seen.add(env.infos["con"]["motion"])
    assert seen == {"Cats make better pets than dogs.", "Tea beats coffee."}
    env.reset(seed=0, options={"motion": "Rivers should have legal rights."})
    assert env.observe("pro")["text"].startswith("Motion: Rivers should have legal rights.\n")
    with pytest.raises(ValueError, match="content words"):
        env.reset(options={"motion": "the of and"})
    with pytest.raises(ValueError, match="not one string"):
        DebateEnv(topics="Tea beats coffee.")
    with pytest.raises(ValueError, match="empty"):
        DebateParallelEnv(topics=[])


# What debaters see ------------------------------------------------------------------------------------


def test_aec_observation_shows_motion_side_phase_and_heard_turns() -> None:
    env = DebateEnv(topics=["Cities should ban private cars from their centres."])
    env.reset(seed=0)
    assert env.infos["con"] == {
        "motion": "Cities should ban private cars from their centres.",
        "side": "con",
        "teammates": [],
        "phases": ["opening", "rebuttal", "rebuttal", "closing"],
    }
    env.step("Cars choke our streets.")
    text = env.observe("con")["text"]
    assert text.splitlines()[:3] == [
        "Motion: Cities should ban private cars from their centres.",
        "You are con, on the CON side: you argue against the motion.",
        "Phase: opening (round 1 of 4). State your case: your main arguments, each with its reasons and evidence.",
    ]
    assert text.endswith("[round 1, opening] pro (PRO):\nCars choke our streets.")
    env.step("Shops need drivers.")
    assert "Phase: rebuttal (round 2 of 4)" in env.observe("pro")["text"]


def test_parallel_debaters_hear_only_earlier_rounds() -> None:
    env = DebateParallelEnv(debaters_per_side=2, rounds=2)
    observations, infos = env.reset(seed=3)
    assert infos["pro_1"]["teammates"] == ["pro_0"]
    assert "Your teammates: pro_0." in observations["pro_1"]["text"]
    actions = {agent: f"{agent} says hello about {infos[agent]['motion']}" for agent in env.agents}
    observations, rewards, *_, step_infos = env.step(actions)
    assert rewards == dict.fromkeys(env.possible_agents, 0.0)
    assert all(f"{agent} says hello" in observations["con_1"]["text"] for agent in env.possible_agents)
    # Round 2: everyone heard all four openings, none of round 2 (they speak at once).
    env.step({agent: "Closing words." for agent in env.agents})
    heard = [turn.heard for turn in env.game.turns]
    assert heard == [0, 0, 0, 0, 4, 4, 4, 4]
    assert set(step_infos["pro_0"]) == {"turn_score", "turn_feedback", "round", "phase", "clipped"}


def test_aec_team_speaking_order() -> None:
    env = DebateEnv(debaters_per_side=2, rounds=3)
    trace = play_aec(env, dict.fromkeys(env.possible_agents, arguer), seed=2)
    movers = [agent for agent, *_, terminated, truncated, _ in trace if not (terminated or truncated)]
    assert movers == ["pro_0", "con_0", "pro_1", "con_1"] * 3
    assert [(t.speaker, t.side, t.round, t.phase) for t in env.game.turns[4:8]] == [
        ("pro_0", "pro", 2, "rebuttal"),
        ("con_0", "con", 2, "rebuttal"),
        ("pro_1", "pro", 2, "rebuttal"),
        ("con_1", "con", 2, "rebuttal"),
    ]
    assert [t.heard for t in env.game.turns[4:8]] == [4, 5, 6, 7]  # taking turns, each hears all before


# Rewards and infos --------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [repeater, silent, off_topic])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_debater_who_argues_beats_one_who_does_not(bad: Any, seed: int) -> None:
    for policies, winner in (({"pro": arguer, "con": bad}, "pro"), ({"pro": bad, "con": arguer}, "con")):
        trace = play_aec(DebateEnv(), policies, seed)
        loser = "con" if winner == "pro" else "pro"
        assert total_rewards(trace) == {winner: 1.0, loser: -1.0}
        verdict = final_infos(trace)[winner]["verdict"]
        assert verdict["winner"] == winner and verdict["scores"][winner] > verdict["scores"][loser] + 0.3
        parallel = play_parallel(DebateParallelEnv(), policies, seed)
        assert parallel[-1][1] == {winner: 1.0, loser: -1.0}


def test_teammates_share_the_zero_sum_reward_and_a_tie_pays_nothing() -> None:
    env = DebateParallelEnv(debaters_per_side=2, rounds=2)
    trace = play_parallel(env, {"pro_0": arguer, "pro_1": arguer, "con_0": silent, "con_1": repeater}, 4)
    assert trace[-1][1] == {"pro_0": 1.0, "con_0": -1.0, "pro_1": 1.0, "con_1": -1.0}
    trace = play_aec(DebateEnv(), {"pro": silent, "con": silent}, 4)
    assert total_rewards(trace) == {"pro": 0.0, "con": 0.0}
    assert final_infos(trace)["pro"]["winner"] is None


def test_scores_mode_pays_each_side_its_verdict_score() -> None:
    env = DebateEnv(debaters_per_side=2, reward_mode="scores")
    policies = {"pro_0": arguer, "pro_1": repeater, "con_0": off_topic, "con_1": arguer}
    trace = play_aec(env, policies, 8)
    verdict = final_infos(trace)["pro_0"]["verdict"]
    totals = total_rewards(trace)
    assert totals["pro_0"] == totals["pro_1"] == verdict["scores"]["pro"]
    assert totals["con_0"] == totals["con_1"] == verdict["scores"]["con"]
    assert 0.0 < verdict["scores"]["con"] < verdict["scores"]["pro"] < 1.0


def test_turn_scores_in_info_agree_with_the_verdict() -> None:
    env = DebateEnv(rounds=3)
    env.reset(seed=1)
    step_scores = []
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step(arguer(observation["text"]) if agent == "pro" else repeater(observation["text"]))
        step_scores.append(env.infos[agent]["turn_score"])
        assert env.infos[agent]["turn_feedback"]["score"] == step_scores[-1]
        if len(step_scores) == 4:  # con's second speech repeats its first
            assert env.infos[agent]["turn_feedback"]["faults"] == ["repeated"]
    assert env.game.verdict is not None
    assert list(env.game.verdict.turn_scores) == step_scores


def test_max_cycles_truncates_before_the_verdict() -> None:
    env = DebateEnv(rounds=4, max_cycles=2)
    trace = play_aec(env, {"pro": arguer, "con": silent}, 0)
    ends = [row for row in trace if row[3] or row[4]]
    assert [(agent, terminated, truncated) for agent, _, _, terminated, truncated, _ in ends] == [
        ("pro", False, True),
        ("con", False, True),
    ]
    assert total_rewards(trace) == {"pro": 0.0, "con": 0.0}
    assert env.game.verdict is None and len(env.game.turns) == 4


# Judges inside the env ----------------------------------------------------------------------------------


def test_a_model_judge_decides_while_rules_score_each_turn() -> None:
    judge = ModelJudge(lambda messages: "CON was sharper.\nPRO: 3/10, CON: 9/10")
    trace = play_aec(DebateEnv(judge=judge, rounds=2), {"pro": arguer, "con": silent}, 0)
    assert total_rewards(trace) == {"pro": -1.0, "con": 1.0}
    info = final_infos(trace)["con"]
    assert info["verdict"]["judge"] == "model" and info["verdict"]["turn_scores"] == []
    assert info["verdict"]["scores"] == {"pro": pytest.approx(0.3), "con": pytest.approx(0.9)}
    assert info["turn_score"] == 0.0  # con's closing was empty: the rule scorer still reports it


def test_a_failing_judge_raises_or_falls_back() -> None:
    def broken(messages: list[dict[str, str]]) -> str:
        return "I refuse to score this."

    env = DebateEnv(judge=ModelJudge(broken), rounds=2)
    env.reset(seed=0)
    for _ in range(3):
        env.step("words")
    with pytest.raises(JudgeError, match="no score for both sides"):
        env.step("last words")

    judge = ModelJudge(broken, fallback=RuleBasedJudge())
    trace = play_aec(DebateEnv(judge=judge, rounds=2), {"pro": arguer, "con": silent}, 0)
    verdict = final_infos(trace)["pro"]["verdict"]
    assert verdict["judge"] == "rule (fallback)" and "no score for both sides" in verdict["error"]
    assert total_rewards(trace) == {"pro": 1.0, "con": -1.0}


# Hostile model output -----------------------------------------------------------------------------------


def test_hostile_replies_never_crash_either_api() -> None:
    env = DebateEnv(render_mode="ansi", rounds=4, max_turn_chars=300)
    trace = play_aec(env, {"pro": _cycle(HOSTILE), "con": _cycle(HOSTILE[3:] + HOSTILE[:3])}, 0)
    assert sum(1 for row in trace if row[3]) == 2  # the debate ended normally
    for row in trace:
        text = row[1]["text"]
        assert not any(ch in text for ch in "\x00\x1b\x07\x7f\x9b\ud800\r")
    rendered = env.render()
    assert isinstance(rendered, str)
    rendered.encode("utf-8")  # no lone surrogates left to break printing or HTTP
    assert max(len(turn.text) for turn in env.game.turns) <= 300 + len(" [...]")
    assert env.game.turns[0].text.endswith(" [...]")

    parallel = DebateParallelEnv(rounds=7, max_turn_chars=300)
    trace = play_parallel(parallel, {"pro": _cycle(HOSTILE), "con": _cycle(HOSTILE[1:])}, 0)
    assert all(trace[-1][2].values())
    assert trace[1][4]["pro"]["clipped"] is True and trace[1][4]["con"]["clipped"] is False


def test_actions_over_the_limit_or_not_str_are_refused_without_moving() -> None:
    env = DebateEnv(max_action_length=100)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="max_action_length"):
        env.step("x" * 101)
    with pytest.raises(TypeError, match="must be a str"):
        env.step(7)  # type: ignore[arg-type]
    assert env.agent_selection == "pro" and env.game.turns == []
    env.step("x" * 100)
    assert env.agent_selection == "con"


def test_observations_stay_in_the_space_when_the_transcript_outgrows_it() -> None:
    words = " ".join(f"w{i} city car ban" for i in range(4000))  # 20,000 distinct-ish characters
    env = DebateParallelEnv(debaters_per_side=2, rounds=4, max_turn_chars=20_000)
    trace = play_parallel(env, dict.fromkeys(env.possible_agents, lambda _: words[:20_000]), 0)
    last_text = trace[-1][0]["pro_0"]["text"]
    assert "earlier turns left out)" in last_text
    assert last_text.startswith("Motion: ") and "The debate is over." in last_text
    assert len(last_text) <= DEFAULT_MAX_OBSERVATION_LENGTH


def test_render_returns_or_prints_the_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    env = DebateEnv(rounds=2, render_mode="ansi")
    play_aec(env, {"pro": arguer, "con": repeater}, 0)
    text = env.render()
    assert isinstance(text, str)
    assert text.startswith(f"Motion: {env.game.motion}\n")
    assert text.count("[round ") == 4 and "[round 2, closing] con (CON):" in text
    assert "The debate is over. PRO wins" in text and "Judge: rule." in text

    human = DebateParallelEnv(rounds=2, render_mode="human")
    play_parallel(human, {"pro": arguer, "con": repeater}, 0)
    assert human.render() is None
    assert "The debate is over." in capsys.readouterr().out
