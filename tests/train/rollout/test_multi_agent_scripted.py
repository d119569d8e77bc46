"""Multi-agent rollouts with scripted games and a generator that replies by rule: exact rewards,
credits, batching, policies, prompts and endings."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mrlm.train.cli import RUN_ERRORS
from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import Policy, ReplayMismatchError, RolloutEngine, Trajectory
from mrlm.train.rollout.policies import NoPolicyError
from tests.train.rollout.scripted import EchoEnv, ScriptedGenerator
from tests.train.rollout.scripted_multi import Coordinate, DigitGenerator, Relay

PARAMS = SamplingParams(max_new_tokens=8)


def _groups(rows: list[Trajectory], size: int) -> list[list[Trajectory]]:
    groups = [rows[i : i + size] for i in range(0, len(rows), size)]
    for group in groups:
        assert len({(t.group, t.agent, t.seed, t.policy) for t in group}) == 1
        assert [t.sample for t in group] == list(range(size))
    assert len({g[0].group for g in groups}) == len(groups)
    return groups


def test_aec_rewards_follow_the_accumulated_rewards_convention(tokenizer: Any) -> None:
    """Between an agent's moves it gets what last() accumulates; before its first, that goes to its first."""
    engine = RolloutEngine(lambda: Relay(rounds=2), DigitGenerator(tokenizer), tokenizer, PARAMS)
    r0, r1 = engine.collect([3])
    assert (r0.agent, r1.agent) == ("r0", "r1")
    # r0 moves 1 and 3; r1 moves 2 and 4 (the last, +1 for all). Every other move costs 0.01.
    assert r0.turn_rewards == pytest.approx([0.1 - 0.01, 0.3 - 0.01 + 1.0])
    assert r1.turn_rewards == pytest.approx([-0.01 + 0.2 - 0.01, 0.4 + 1.0])
    assert [i["move"] for i in r0.infos] == [1, 3] and [i["move"] for i in r1.infos] == [2, 4]
    assert r0.terminated and r1.terminated and r0.final_observation is not None
    # Each agent sees the moves since its own: r1's first prompt already holds r0's move.
    assert "moves so far ['0']" in r1.messages[1]["content"]
    assert r0.episode == r1.episode


def test_parallel_rewards_and_align_groups(tokenizer: Any) -> None:
    generator = DigitGenerator(tokenizer)
    engine = RolloutEngine(lambda: Coordinate(rounds=2), generator, tokenizer, PARAMS)
    rows = engine.collect([1, 2], group_size=2)
    groups = _groups(rows, 2)
    assert [(g[0].seed, g[0].agent) for g in groups] == [(1, "p0"), (1, "p1"), (2, "p0"), (2, "p1")]
    for row in rows:
        # Round 1: sample j of every agent says j (the episodes share the prompts): all agree, each
        # scores 1 + j / 10. Round 2: the prompts differ by episode, every agent says 0.
        assert row.turn_rewards == pytest.approx([1 + 0.1 * (row.sample or 0), 1.0])
        assert row.messages[0] == {"role": "system", "content": f"Name a digit.\n\nYou are {row.agent}."}
    # Joint episode j of a seed: the rows of p0 and p1 with sample j.
    assert rows[0].episode == rows[2].episode != rows[1].episode
    # One generate call per round for every episode and agent of the batch.
    assert generator.calls == [8, 8]


def test_cross_credits_each_sample_with_its_mean_return(tokenizer: Any) -> None:
    engine = RolloutEngine(
        lambda: Coordinate(num_agents=3), DigitGenerator(tokenizer), tokenizer, PARAMS, joint="cross"
    )
    rows = engine.collect([5, 6], group_size=2)
    assert len(rows) == 2 * 3 * 2
    for row in _groups(rows, 2)[0] + _groups(rows, 2)[-1]:
        # Sample j agrees with the 2 others in 1 of the 4 joint actions containing it.
        assert row.turn_rewards == pytest.approx([0.25 + 0.1 * (row.sample or 0)])
    with pytest.raises(ValueError, match="8 joint actions per round, more than max_joint_actions=4"):
        RolloutEngine(
            lambda: Coordinate(num_agents=3),
            DigitGenerator(tokenizer),
            tokenizer,
            PARAMS,
            joint="cross",
            max_joint_actions=4,
        ).collect([0], group_size=2)


def test_cross_over_several_rounds_trains_only_the_round_s_sample(tokenizer: Any) -> None:
    engine = RolloutEngine(
        lambda: Coordinate(rounds=2),
        DigitGenerator(tokenizer),
        tokenizer,
        PARAMS,
        joint="cross",
        step_workers=2,
    )
    rows = engine.collect([7], group_size=2)
    first, second = rows[:4], rows[4:]
    assert [(t.agent, t.num_turns) for t in first] == [("p0", 1)] * 2 + [("p1", 1)] * 2
    assert [(t.agent, t.num_turns) for t in second] == [("p0", 2)] * 2 + [("p1", 2)] * 2
    for row in second:
        assert row.turn_rewards == pytest.approx([0.0, 0.5 + 0.1 * (row.sample or 0)])
        (start, end), (last_start, last_end) = row.turn_spans
        assert sum(row.mask) == last_end - last_start and not any(row.mask[start:end])
        # The line went on with samples 0: round 2 prompts show the others' "0".
        assert row.messages[-2]["content"].endswith("'0'}.") and row.messages[2]["content"] == "0"
        assert row.terminated
    assert {t.episode for t in rows} == {rows[0].episode}


def test_cross_refuses_an_env_that_replays_differently(tokenizer: Any) -> None:
    draws = itertools.count()

    class Drifting(Coordinate):
        def _observe(self, agent: str) -> str:
            return super()._observe(agent) + f" (draw {next(draws)})"

    engine = RolloutEngine(Drifting, DigitGenerator(tokenizer), tokenizer, PARAMS, joint="cross")
    with pytest.raises(ReplayMismatchError, match="seed 4 and replayed observes differently"):
        engine.collect([4], group_size=2)


def test_a_single_agent_env_in_cross_mode(tokenizer: Any) -> None:
    engine = RolloutEngine(EchoEnv, ScriptedGenerator(tokenizer), tokenizer, PARAMS, joint="cross")
    rows = engine.collect([5], group_size=2)
    # Round 1: both samples wrong; round 2 (after sample 0's attempt): both right.
    assert [(t.agent, t.num_turns, t.total_reward) for t in rows] == [
        (None, 1, 0.0),
        (None, 1, 0.0),
        (None, 2, 1.0),
        (None, 2, 1.0),
    ]
    assert rows[1].finish_reasons == ["length"] and rows[2].finish_reasons == ["stop", "stop"]


def test_policies_by_agent_batch_per_policy(tokenizer: Any) -> None:
    first, second = DigitGenerator(tokenizer), DigitGenerator(tokenizer)
    engine = RolloutEngine(
        lambda: Coordinate(num_agents=3, rounds=2),
        {
            "even": Policy(first, tokenizer),
            "odd": Policy(second, tokenizer, SamplingParams(max_new_tokens=4)),
        },
        sampling=PARAMS,
        agent_policies={"p0": "even", "p1": "odd", "p2": "even"},
    )
    rows = engine.collect([0, 1], group_size=2)
    assert [(t.agent, t.policy) for t in rows[:6:2]] == [("p0", "even"), ("p1", "odd"), ("p2", "even")]
    assert first.calls == [8, 8] and second.calls == [4, 4]
    assert engine.policies.sampling("odd").max_new_tokens == 4
    with pytest.raises(AttributeError, match="several policies"):
        _ = engine.generator


def test_an_agent_without_a_policy_is_named(tokenizer: Any) -> None:
    policies = {
        "a": Policy(DigitGenerator(tokenizer), tokenizer),
        "b": Policy(DigitGenerator(tokenizer), tokenizer),
    }
    with pytest.raises(NoPolicyError, match="no policy for agent 'p0'") as raised:
        RolloutEngine(Coordinate, policies, sampling=PARAMS).collect([0])
    # One readable line (a KeyError would show its message quoted), which the CLI prints as it is.
    assert str(raised.value).startswith("no policy for agent 'p0': the policies are ['a', 'b']")
    assert "possible_agents" in str(raised.value) and NoPolicyError in RUN_ERRORS
    with pytest.raises(KeyError, match="mapped to policy 'c'"):
        RolloutEngine(Coordinate, policies, sampling=PARAMS, agent_policies=lambda agent: "c").collect([0])
    # Policies named like the agents need no map.
    named = {"p0": policies["a"], "p1": policies["b"]}
    assert [t.policy for t in RolloutEngine(Coordinate, named, sampling=PARAMS).collect([0])] == ["p0", "p1"]


def test_custom_system_prompts(tokenizer: Any) -> None:
    def prompt(agent: str | None, info: Any) -> str | None:
        return None if agent == "p1" else f"Team member {agent}, topic {info['topic']}."

    rows = RolloutEngine(
        Coordinate, DigitGenerator(tokenizer), tokenizer, PARAMS, system_prompt=prompt
    ).collect([0])
    assert rows[0].messages[0]["content"].startswith("Team member p0, topic ")
    assert rows[1].messages[0]["role"] == "user"
    # A given prompt gets every agent's name, its own model's too.
    own = {agent: Policy(DigitGenerator(tokenizer), tokenizer, names_agent=False) for agent in ("p0", "p1")}
    rows = RolloutEngine(Coordinate, own, sampling=PARAMS, system_prompt=prompt).collect([0])
    assert rows[0].messages[0]["content"].startswith("Team member p0, topic ")


def test_an_agent_is_named_unless_its_policy_was_trained_without_the_line(tokenizer: Any) -> None:
    def openings(engine: RolloutEngine) -> dict[str | None, str]:
        return {row.agent: row.messages[0]["content"] for row in engine.collect([0])}

    def policy(names_agent: bool = True) -> Policy:
        return Policy(DigitGenerator(tokenizer), tokenizer, names_agent=names_agent)

    named = {"p0": "Name a digit.\n\nYou are p0.", "p1": "Name a digit.\n\nYou are p1."}
    # One policy plays both agents: the line tells it which one it is.
    assert openings(RolloutEngine(Coordinate, DigitGenerator(tokenizer), tokenizer, PARAMS)) == named
    # One policy per agent, a player and its opponent, even named like the agents: the line stays.
    mapped = RolloutEngine(
        Coordinate, {"a": policy(), "b": policy()}, sampling=PARAMS, agent_policies={"p0": "a", "p1": "b"}
    )
    assert openings(mapped) == named
    assert openings(RolloutEngine(Coordinate, {"p0": policy(), "p1": policy()}, sampling=PARAMS)) == named
    # Each agent's own model, trained without the line: the env's prompt alone.
    own = RolloutEngine(Coordinate, {"p0": policy(False), "p1": policy(False)}, sampling=PARAMS)
    assert openings(own) == {"p0": "Name a digit.", "p1": "Name a digit."}
    # A mix: p0 plays its own model, p1 and p2 one shared model.
    mixed = RolloutEngine(
        lambda: Coordinate(num_agents=3),
        {"p0": policy(False), "team": policy()},
        sampling=PARAMS,
        agent_policies={"p0": "p0", "p1": "team", "p2": "team"},
    )
    assert openings(mixed) == {"p0": "Name a digit."} | {
        agent: f"Name a digit.\n\nYou are {agent}." for agent in ("p1", "p2")
    }
    # A policy given without its tokenizer (the engine's) keeps its opening.
    untokenized = {name: Policy(DigitGenerator(tokenizer), None, names_agent=False) for name in ("p0", "p1")}
    assert openings(RolloutEngine(Coordinate, untokenized, tokenizer, PARAMS)) == openings(own)


@pytest.mark.parametrize(
    "make", [lambda: Coordinate(rounds=5), lambda: Relay(rounds=5)], ids=["parallel", "aec"]
)
def test_the_engine_s_limits_end_the_episode_for_everyone(tokenizer: Any, make: Any) -> None:
    rows = RolloutEngine(make, DigitGenerator(tokenizer), tokenizer, PARAMS, max_turns=2).collect([0])
    assert [(t.num_turns, t.truncation) for t in rows] == [(2, "max_turns")] * 2
    assert all(t.final_observation for t in rows)

    first_reply_end = rows[1].turn_spans[0][1]
    engine = RolloutEngine(
        make, DigitGenerator(tokenizer), tokenizer, PARAMS, max_prompt_tokens=first_reply_end + 2
    )
    rows = engine.collect([0])
    assert all(t.truncation == "prompt_too_long" for t in rows)
    for row in rows:
        # No conversation ends with a prompt it could not answer.
        assert row.messages[-1]["role"] == "assistant" and len(row.token_ids) == row.turn_spans[-1][1]


def test_state_dict_continues_episode_and_group_ids(tokenizer: Any) -> None:
    engine = RolloutEngine(Coordinate, DigitGenerator(tokenizer), tokenizer, PARAMS)
    engine.collect([0], group_size=2)
    state = engine.state_dict()
    assert state == {"calls": 1, "next_group": 2, "next_episode": 2}
    other = RolloutEngine(Coordinate, DigitGenerator(tokenizer), tokenizer, PARAMS)
    other.load_state_dict({"calls": 1, "next_group": 2})  # a checkpoint from before episode ids
    assert [t.group for t in other.collect([1])] == [2, 3]


def test_arguments_are_checked(tokenizer: Any) -> None:
    generator = DigitGenerator(tokenizer)
    with pytest.raises(ValueError, match="joint must be"):
        RolloutEngine(Coordinate, generator, tokenizer, PARAMS, joint="all")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="built a parallel env; the engine was asked for 'aec'"):
        RolloutEngine(Coordinate, generator, tokenizer, PARAMS, kind="aec").collect([0])
    with pytest.raises(ValueError, match="needs its tokenizer"):
        RolloutEngine(Coordinate, generator)
    with pytest.raises(ValueError, match="no sampling parameters"):
        RolloutEngine(Coordinate, generator, tokenizer)
