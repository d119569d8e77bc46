"""Scripted debaters for the tests: one that argues well and three that fail in known ways.

Each policy maps an observation text to a speech. :func:`arguer` reads the motion, its side, the phase
and the other side's last speech from the observation, so it rebuts what was actually said.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from mrlm.envs.debate.text import content_words, words

Policy = Callable[[str], str]

_TURN_HEADER = re.compile(r"^\[round \d+, \w+\] \S+ \((PRO|CON)\):$", re.MULTILINE)


def read_observation(observation: str) -> dict[str, Any]:
    """Motion, side, phase, round and the opponents' speeches, parsed from an observation text."""
    motion = re.search(r"^Motion: (.*)$", observation, re.MULTILINE)
    side = re.search(r"on the (PRO|CON) side", observation)
    phase = re.search(r"^Phase: (\w+) \(round (\d+)", observation, re.MULTILINE)
    assert motion and side, observation[:300]
    headers = list(_TURN_HEADER.finditer(observation))
    theirs = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(observation)
        if header.group(1) != side.group(1):
            theirs.append(observation[header.end() : end].strip())
    return {
        "motion": motion.group(1),
        "side": side.group(1).lower(),
        "phase": phase.group(1) if phase else "over",
        "round": int(phase.group(2)) if phase else 0,
        "opponent_turns": theirs,
    }


def _their_words(motion: str, turns: list[str], count: int) -> list[str]:
    """The opponent's most distinctive words of the last speech: longest first, motion words aside."""
    if not turns:
        return ["cost"] * count
    topic = content_words(motion)
    found = sorted(
        {w for w in words(turns[-1]) if len(w) > 4 and w not in topic and content_words(w)},
        key=lambda w: (-len(w), w),
    )
    return [*found, "cost", "risk", "fairness"][:count]


def arguer(observation: str) -> str:
    """Structured, evidenced, reasoned, on topic, and answering the other side's last speech."""
    seen = read_observation(observation)
    motion = seen["motion"].rstrip(".")
    claim = motion[0].lower() + motion[1:]
    verdict = "the motion deserves your support" if seen["side"] == "pro" else "the motion must be rejected"
    round_no = seen["round"]
    a, b, c = _their_words(seen["motion"], seen["opponent_turns"], 3)
    if seen["phase"] == "opening":
        return (
            f"First, consider the case: {claim}. This matters because the change reaches millions of "
            f"households. For example, a 2019 survey of 1,200 residents found that 64 percent saw clear "
            f"effects within a year.\n\nSecond, the costs are manageable, since pilot programmes in 12 "
            f"regions show spending falling after three years. Therefore {verdict}."
        )
    if seen["phase"] == "rebuttal" and round_no % 2 == 0:
        return (
            f"In response to my opponent: they claim that {a} and {b} settle the question, but this "
            f"ignores the data. Research from {2010 + round_no} across {7 * round_no} towns shows the "
            f"opposite effect on {c}.\n\nMoreover, on the claim that {claim}, the evidence points our way, "
            f"which means the burden of proof now lies with them. As a result, {verdict}."
        )
    if seen["phase"] == "rebuttal":
        return (
            f"Let me answer the other side again. Their talk of {a} fails to survive scrutiny, and their "
            f"point about {b} overlooks who pays. A study published in {2000 + round_no} of {30 + round_no} "
            f"cases, for instance, measured {c} directly and contradicts them.\n\nFurthermore, whether "
            f"{claim} is a question of outcomes, so the numbers decide it; consequently {verdict}."
        )
    return (
        f"In conclusion, the other side never answered our strongest point. They relied on {a} and {b}, "
        f"however neither survives the evidence on {c}: according to the 2022 report, 3 in 4 projects "
        f"met their goals.\n\nTo sum up, we showed why {claim}, with reasons and numbers at every step; "
        f"therefore {verdict}."
    )


def repeater(observation: str) -> str:
    """A decent opening, then the very same speech every round."""
    motion = read_observation(observation)["motion"]
    return (
        f"First, {motion} This is true because the evidence is strong: for example, studies of 40 cases "
        "agree. Therefore our side is right."
    )


def silent(observation: str) -> str:
    """Says nothing."""
    return ""


OFF_TOPIC_TEXT = (
    "First, knitting a scarf needs 200 grams of merino wool because thicker yarn knits faster. For "
    "example, studies of 30 knitters show that circular needles reduce wrist strain. Moreover, a cable "
    "pattern looks elegant, therefore beginners should try stockinette stitches first."
)


def off_topic(observation: str) -> str:
    """Structured and evidenced, but about knitting."""
    return OFF_TOPIC_TEXT


POLICIES: dict[str, Policy] = {
    "arguer": arguer,
    "repeater": repeater,
    "silent": silent,
    "off_topic": off_topic,
}


def play_aec(
    env: Any, policies: Mapping[str, Policy], seed: int, options: dict[str, Any] | None = None
) -> list[Any]:
    """One AEC episode; every ``last()`` in order, with each observation checked against its space."""
    env.reset(seed=seed, options=options)
    trace: list[Any] = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(observation), agent
        trace.append((agent, observation, reward, terminated, truncated, info))
        env.step(None if terminated or truncated else policies[agent](observation["text"]))
    return trace


def play_parallel(
    env: Any, policies: Mapping[str, Policy], seed: int, options: dict[str, Any] | None = None
) -> list[Any]:
    """One parallel episode; every step's results, with each observation checked against its space."""
    observations, infos = env.reset(seed=seed, options=options)
    trace: list[Any] = [(observations, infos)]
    while env.agents:
        actions = {agent: policies[agent](observations[agent]["text"]) for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for agent, observation in observations.items():
            assert env.observation_space(agent).contains(observation), agent
        trace.append((observations, rewards, terminations, truncations, infos))
    return trace


def final_infos(trace: list[Any]) -> dict[str, dict[str, Any]]:
    """The last info of each agent in an AEC trace (from its final ``last()``)."""
    return {agent: info for agent, _, _, _, _, info in trace}


def total_rewards(trace: list[Any]) -> dict[str, float]:
    """The sum of each agent's rewards in an AEC trace."""
    totals: dict[str, float] = {}
    for agent, _, reward, _, _, _ in trace:
        totals[agent] = totals.get(agent, 0.0) + reward
    return totals
