"""CoMLRL's quick start, ported: two agents, a summary and a longer version, rewarded on the ratio of
their lengths.

A CoMLRL run is built from records, one prompt formatter per agent and a reward function called with
one list of completions per agent; ``mrlm.envs.DatasetTaskEnv`` takes exactly those pieces (the
reward through ``comlrl_reward``, which calls it as CoMLRL does) and is a PettingZoo Parallel env, so
``magrpo.train`` trains on it, here with one model per agent. What changes: the dataset is a local
list of posts (no hub), the models are tiny local ones, and the update gains MRLM's options
(clipped ratio, several passes, KL, dynamic sampling, DDP/FSDP).

The reward wants the second agent's text 2 to 3 times as long as the first's; the tiny models learn
to stop early (first agent) and go on (second agent). The example prints the mean team reward of
the first and the last steps.

Run (about 40 seconds on two CPU cores; the run lands in ./runs/magrpo_comlrl_port)::

    uv run python examples/magrpo_comlrl_port.py --steps 30
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mrlm.envs import DatasetTaskEnv
from mrlm.envs.dataset_task import comlrl_reward
from mrlm.train.algorithms import magrpo
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.fsio import remove_tree

POSTS = [
    "My roommate keeps eating my food even after I labelled everything. How do I bring it up?",
    "I got a job offer with better pay but a much longer commute. Should I take it?",
    "Our team lead schedules meetings at lunch every day and nobody dares to complain.",
    "I adopted a cat last month and she hides under the bed whenever guests come over.",
    "My parents want me to study law but I would rather train as an electrician.",
    "The neighbours practise the drums at midnight and the landlord does not answer my mails.",
    "I lent a friend money a year ago and he has not mentioned it since.",
    "I want to start running but my knees hurt after a few kilometres.",
]


# The three pieces of a CoMLRL run, written as CoMLRL expects them.
def summary_prompt(item: Mapping[str, Any]) -> str:
    return f"Summarise this post in one short sentence.\n\n{item['prompt']}"


def expansion_prompt(item: Mapping[str, Any]) -> str:
    return (
        f"Write a detailed version of this post, two or three times as long as a summary.\n\n{item['prompt']}"
    )


def length_ratio_reward(summaries: list[str], expansions: list[str], batch_items: Any = None) -> list[float]:
    """1 when the expansion is 2.5 times as long as the summary, falling off smoothly either side."""
    rewards = []
    for short, long in zip(summaries, expansions, strict=True):
        ratio = (len(long) + 1) / (len(short) + 1)
        rewards.append(math.exp(-abs(math.log(ratio / 2.5))))
    return rewards


def make_env() -> DatasetTaskEnv:
    return DatasetTaskEnv(
        [{"prompt": post} for post in POSTS],
        formatters=[summary_prompt, expansion_prompt],
        reward=comlrl_reward(length_ratio_reward),
        agents=["summary", "expansion"],
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    out = Path("runs/magrpo_comlrl_port")
    remove_tree(out)  # a rerun starts afresh
    config = magrpo.MAGRPOConfig(
        env_id="tldr-length-ratio",
        policies="per_agent",
        group_size=4,
        prompts_per_step=4,
        max_new_tokens=32,
        run=RunConfig(output_dir=str(out), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    final = magrpo.train(config, env=make_env)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    window = max(1, len(rows) // 5)
    first = sum(row["reward"] for row in rows[:window]) / window
    last = sum(row["reward"] for row in rows[-window:]) / window
    print(f"mean team reward, first {window} steps: {first:.3f}; last {window} steps: {last:.3f}")
    print(f"models: {final / 'summary'}, {final / 'expansion'}")


if __name__ == "__main__":
    main()
