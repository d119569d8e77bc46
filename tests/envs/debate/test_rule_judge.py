"""The rule-based judge: scores derived by hand, each fault, and the ordering of scripted debaters."""

from __future__ import annotations

import pytest

from mrlm.envs.debate import RuleBasedJudge, Turn
from mrlm.envs.debate.env import DebateParallelEnv
from mrlm.envs.debate.transcript import Phase, Side
from tests.envs.debate.scripted import Policy, arguer, off_topic, play_parallel, repeater, silent

MOTION = "Cities should ban private cars from their centres."  # content words: city ban private car centre


def _turn(speaker: Side, phase: Phase, text: str, heard: int, round_no: int = 1) -> Turn:
    return Turn(speaker=speaker, side=speaker, phase=phase, round=round_no, text=text, heard=heard)


T1 = _turn(
    "pro", "opening", "First, cars pollute because engines burn fuel. For example, 30 studies agree.", 0
)
T2 = _turn(
    "con",
    "rebuttal",
    "My opponent blames engines and fuel, but however you count it, private cars carry families.",
    1,
    2,
)
T3 = _turn("pro", "rebuttal", T1.text, 2, 2)


def test_an_opening_scored_by_hand() -> None:
    score = RuleBasedJudge().score_turn(MOTION, [T1], 0)
    # structure: "first" -> 1 of 3. evidence: "for example", "studies" and the number 30 -> 3 of 3.
    # reasoning: "because" -> 1 of 2. relevance: "car" is the only motion word -> 1 of 2.
    # development: 11 words of 60. No rebuttal in an opening. Mean of five parts, no fault.
    assert (score.structure, score.evidence, score.reasoning, score.relevance) == (1 / 3, 1.0, 0.5, 0.5)
    assert score.development == pytest.approx(11 / 60, abs=1e-12)
    assert score.rebuttal is None and score.faults == ()
    assert score.score == pytest.approx((1 / 3 + 1 + 0.5 + 0.5 + 11 / 60) / 5, abs=1e-12)  # 0.50333


def test_a_rebuttal_scored_by_hand() -> None:
    score = RuleBasedJudge().score_turn(MOTION, [T1, T2], 1)
    # No signpost, evidence or reasoning marker: 0, 0, 0. Motion words "private", "car" -> 2 of 2.
    # 15 words -> 15/60. Rebuttal: markers "my opponent", "but", "however" -> full half; words shared with
    # PRO's opening, motion words aside: "engine", "fuel" -> 2 of 4 -> half of the other half: 0.75.
    assert (score.structure, score.evidence, score.reasoning, score.relevance) == (0.0, 0.0, 0.0, 1.0)
    assert score.development == 0.25 and score.rebuttal == 0.75
    assert score.score == pytest.approx((0 + 0 + 0 + 1 + 0.25 + 0.75) / 6, abs=1e-12)  # 1/3


def test_a_repeated_turn_loses_the_penalty() -> None:
    score = RuleBasedJudge(penalty=0.25).score_turn(MOTION, [T1, T2, T3], 2)
    # The opening's five parts again, plus a rebuttal: no marker, and "engine", "fuel" are shared with
    # CON's turn -> 0.5 * 0 + 0.5 * 2/4 = 0.25. Mean of six minus 0.25 for the repetition.
    assert score.faults == ("repeated",)
    assert score.rebuttal == 0.25
    quality = (1 / 3 + 1 + 0.5 + 0.5 + 11 / 60 + 0.25) / 6
    assert score.score == pytest.approx(quality - 0.25, abs=1e-12)  # 0.21111
    assert RuleBasedJudge().score_turn(MOTION, [T1, T2, T3], 2).score == 0.0  # 0.46 - 0.5, clipped


def test_the_verdict_averages_turn_scores_per_side() -> None:
    judge = RuleBasedJudge(penalty=0.25)
    verdict = judge.judge(MOTION, [T1, T2, T3])
    pro = ((1 / 3 + 1 + 0.5 + 0.5 + 11 / 60) / 5 + (1 / 3 + 1 + 0.5 + 0.5 + 11 / 60 + 0.25) / 6 - 0.25) / 2
    assert verdict.scores["pro"] == pytest.approx(pro, abs=1e-12)  # 0.35722
    assert verdict.scores["con"] == pytest.approx(1 / 3, abs=1e-12)
    assert verdict.winner == "pro" and verdict.judge == "rule"
    assert verdict.turn_scores == tuple(s.score for s in judge.score_turns(MOTION, [T1, T2, T3]))
    assert "pro round 2: repeated" in verdict.rationale
    assert RuleBasedJudge(penalty=0.25, tie_margin=0.05).judge(MOTION, [T1, T2, T3]).winner is None
    assert judge.judge(MOTION, [T1, T2, T3]) == verdict  # deterministic


@pytest.mark.parametrize(
    ("side", "text", "faults"),
    [
        ("pro", "   \n\t ", ("empty",)),
        ("pro", "car ban " * 20, ("repetitive",)),
        ("con", "Knitting needs wool because yarn matters; for example 3 studies.", ("off_topic",)),
        ("con", "You are right about private cars, I was wrong.", ("concedes",)),
        ("pro", "Honestly, I oppose the motion on private cars.", ("concedes",)),
        ("con", "Honestly, I oppose the motion on private cars.", ()),  # CON may say so
        ("pro", "Do not reject the motion: private cars harm cities.", ()),  # negated
        ("pro", "Reject the motion: private cars are fine in cities.", ("concedes",)),
        ("con", "Cities should never accept the motion about cars.", ()),
    ],
)
def test_faults(side: Side, text: str, faults: tuple[str, ...]) -> None:
    score = RuleBasedJudge().score_turn(MOTION, [_turn(side, "opening", text, 0)], 0)
    assert score.faults == faults
    if faults == ("empty",):
        assert score.score == 0.0


def test_rebuttal_counts_only_opponents_that_were_heard() -> None:
    reply = _turn("con", "rebuttal", "My opponent says engines burn fuel, but private cars matter.", 0, 2)
    assert RuleBasedJudge().score_turn(MOTION, [T1, reply], 1).rebuttal is None  # heard nothing
    heard = _turn("con", "rebuttal", reply.text, 1, 2)
    # Markers "my opponent", "but" -> 0.5; "engine", "burn", "fuel" shared -> 0.5 * 3/4.
    assert RuleBasedJudge().score_turn(MOTION, [T1, heard], 1).rebuttal == 0.875


@pytest.mark.parametrize(
    ("bad", "expected"), [(repeater, "repeated"), (silent, "empty"), (off_topic, "off_topic")]
)
def test_arguing_beats_repeating_silence_and_wandering_off(bad: Policy, expected: str) -> None:
    for seed in range(3):
        env = DebateParallelEnv(reward_mode="scores")
        trace = play_parallel(env, {"pro": bad, "con": arguer}, seed)
        rewards = trace[-1][1]
        assert rewards["con"] > 0.7 and rewards["pro"] < 0.4, rewards
        faults = [s.faults for s in env.game.scorer.score_turns(env.game.motion, env.game.turns)]
        assert all(expected in f for f in faults[2::2]), faults  # every later PRO turn has the fault
        assert all(f == () for f in faults[1::2])  # the arguer never does
