"""Run one episode of ``mrlm/Debate-v0`` with two scripted debaters through the PettingZoo AEC API.

PRO argues with signposts, reasons, numbers and answers to CON's words; CON repeats one slogan. The
rule-based judge scores every speech as it is given (``info["turn_score"]``) and decides at the end.
The same seed always gives the same motion and the same transcript.

Run: ``uv run python examples/debate_episode.py --seed 3``
"""

from __future__ import annotations

import argparse
import re

import mrlm.envs


def careful_debater(observation: str) -> str:
    """Builds a speech from the motion, the phase and the last words of the other side."""
    motion = re.search(r"^Motion: (.*)$", observation, re.MULTILINE)
    phase = re.search(r"^Phase: (\w+) \(round (\d+)", observation, re.MULTILINE)
    assert motion is not None and phase is not None
    claim = motion.group(1).rstrip(".").lower()
    round_no = int(phase.group(2))
    last_speech = observation.rsplit("(CON):\n", 1)[-1] if "(CON):\n" in observation else ""
    their_word = max(re.findall(r"[a-z]{6,}", last_speech.lower()) or ["slogans"], key=len)
    if phase.group(1) == "opening":
        return (
            f"First, {claim}, because the benefits reach every household. For example, a 2019 survey "
            f"of 1,200 residents found that 64 percent noticed the change within a year. Second, the "
            f"costs are modest, since pilots in 12 regions paid for themselves. Therefore the motion stands."
        )
    if phase.group(1) == "rebuttal" and round_no % 2 == 1:  # a second wording, so it does not repeat itself
        return (
            f"Let me answer the other side again. Talk of {their_word} is not an argument: a study of "
            f"{5 * round_no} cities, for instance, measured the effect directly. Furthermore, nobody has "
            f"shown why {claim} would fail, so our case grows stronger."
        )
    if phase.group(1) == "rebuttal":
        return (
            f"In response to my opponent: their point about {their_word} ignores the data. Research from "
            f"{2015 + round_no} across {10 * round_no} towns shows the opposite, which means their "
            f"case fails to answer ours. Moreover, the claim that {claim} still has no reply."
        )
    return (
        f"In conclusion, the other side repeated {their_word} but never engaged with the evidence. To sum "
        f"up, we showed with reasons and 3 independent studies that {claim}; therefore vote with us."
    )


def slogan_debater(observation: str) -> str:
    """Says the same thing every time."""
    return "This idea is simply wrong and everyone knows it. We oppose it."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    env = mrlm.envs.make("mrlm/Debate-v0", kind="aec", rounds=args.rounds, render_mode="ansi")
    env.reset(seed=args.seed)
    policies = {"pro": careful_debater, "con": slogan_debater}
    totals = dict.fromkeys(env.possible_agents, 0.0)
    verdict = None
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            verdict = info.get("verdict", verdict)
            env.step(None)
            continue
        env.step(policies[agent](observation["text"]))
        print(f"{agent:>3} spoke; turn score {env.infos[agent]['turn_score']:.2f}")
    print()
    print(env.render())
    assert verdict is not None
    print(f"winner: {verdict['winner']}, side scores: {verdict['scores']}")
    print(f"rewards: {totals}")
    env.close()


if __name__ == "__main__":
    main()
