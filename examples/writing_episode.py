"""Play ``mrlm/Writing-v0`` with scripted writers through the AEC API, and compare with poor teams.

The summary writer turns the post's title into a TL;DR. The expansion writer, who acts second and so
reads the new summary, opens with it and then retells the post in the third person. The script prints
the transcript, the shared reward and its components, then the scores of teams that paste the post,
write about something else, repeat one word, or write nothing, on the same task.

Run: ``uv run python examples/writing_episode.py --seed 0``
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from pettingzoo import AECEnv

import mrlm.envs

Writer = Callable[[str], str]

_THIRD_PERSON = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves"}
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE_START = re.compile(r"(^|[.?!]\s+)([a-z])")


def section(observation: str, header: str) -> str:
    """The lines after ``header`` up to the next blank line."""
    lines = observation.splitlines()
    start = lines.index(header) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "\n".join(lines[start:end])


def field(observation: str, name: str) -> str:
    return next(
        (line[len(name) + 2 :] for line in observation.splitlines() if line.startswith(f"{name}: ")), ""
    )


def summary_writer(observation: str) -> str:
    title = field(observation, "Title").rstrip("?.")
    return f"TL;DR: {title}. The poster describes what happened and asks for advice on what to do next."


def expansion_writer(observation: str) -> str:
    post = section(observation, "=== Post ===")
    summary = (
        section(observation, "=== Latest part of summary ===")
        if "=== Latest part of summary ===" in observation
        else ""
    )
    retold = _WORD.sub(lambda m: _THIRD_PERSON.get(m.group().lower(), m.group()), post)
    retold = _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), retold)
    opening = f"In short: {summary.removeprefix('TL;DR: ')}\n\n" if summary else ""
    return f"{opening}In more detail, the poster explains the situation. {retold}"


def play(env: AECEnv, seed: int, writers: dict[str, Writer]) -> tuple[float, dict[str, Any]]:
    """One episode; returns the team's total reward and the summary writer's last info."""
    env.reset(seed=seed)
    total, final_info = 0.0, {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            if agent == "summary":  # both agents get the same team reward: count it once
                total, final_info = total + reward, info
            env.step(None)
            continue
        env.step(writers[agent](observation["text"]))
    return total, final_info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0, help="picks the post")
    args = parser.parse_args()

    env = mrlm.envs.make("mrlm/Writing-v0", kind="aec", render_mode="ansi")
    scripted: dict[str, Writer] = {"summary": summary_writer, "expansion": expansion_writer}
    total, info = play(env, args.seed, scripted)
    print(env.render())
    print(f"team reward {total:.3f} (shared by both writers); components:")
    for name, value in info["components"].items():
        print(f"  {name:<16} {value:.3f}")
    print("the summary writer's own part:", {k: round(v, 3) for k, v in info["agent_components"].items()})

    post = env.game.task.source
    sports = (
        "Our team won the regional football final on Saturday after a tense penalty shootout. "
        "Both sides defended well, and the score stayed level through ninety minutes and extra time. "
        "Our goalkeeper saved two kicks, the captain scored the last one, and fans celebrated until "
        "midnight. The coach praised the players for their patience over a long season of training, "
        "travel and difficult away games, and promised a parade through the town next week."
    )
    baselines: dict[str, dict[str, Writer]] = {
        "scripted writers": scripted,
        "paste the post": {"summary": lambda _: post, "expansion": lambda _: post},
        "off-topic prose": {"summary": lambda _: sports.split(". ")[0], "expansion": lambda _: sports},
        "repeated word": {"summary": lambda _: "advice " * 20, "expansion": lambda _: "advice " * 120},
        "empty": {"summary": lambda _: "", "expansion": lambda _: ""},
    }
    print(f"\nteam scores on post {env.game.task.index}:")
    for name, writers in baselines.items():
        print(f"  {name:<18} {play(env, args.seed, writers)[0]:.4f}")
    env.close()


if __name__ == "__main__":
    main()
