"""Run episodes of ``mrlm/Math-v0`` with a scripted agent through the plain Gymnasium API.

The agent solves arithmetic itself for levels 1-3 and guesses otherwise, so the mean reward shows the
reward signal a trainer would see. The same seed always gives the same task.

Run: ``uv run python examples/math_episode.py --episodes 20``
"""

from __future__ import annotations

import argparse
import re

import gymnasium

import mrlm.envs  # noqa: F401  (registers the mrlm/ ids with Gymnasium)


def scripted_reply(question: str) -> str:
    """A tiny 'model': evaluates simple integer arithmetic, otherwise guesses 0."""
    match = re.fullmatch(r"What is ([\d\s+\-*/()]+)\?", question)
    if match:
        value = eval(match.group(1), {"__builtins__": {}})  # digits and operators only
        return f"Let me compute. The result is \\boxed{{{value:g}}}"
    return "I am not sure. \\boxed{0}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = gymnasium.make("mrlm/Math-v0", format_reward=0.1)
    total = 0.0
    for episode in range(args.episodes):
        question, info = env.reset(seed=args.seed + episode)
        _, reward, terminated, truncated, step_info = env.step(scripted_reply(question))
        assert terminated and not truncated
        total += float(reward)
        print(
            f"level {info['level']} | {question:<60} | reward {reward:.2f} | correct {step_info['correct']}"
        )
    print(f"mean reward over {args.episodes} episodes: {total / args.episodes:.3f}")


if __name__ == "__main__":
    main()
