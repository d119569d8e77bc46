"""Reset+step throughput of the math env with numeric answers, local and in-process. Prints JSON.

Measures generated tasks through ``gymnasium.make`` (wrappers included) and unwrapped, each topic on
its own, and GSM8K-style records held in memory. Replies are boxed numbers, so every check takes the
exact in-process path (symbolic checks in worker processes are a different, slower regime).

Run: ``uv run python benchmarks/env_throughput.py --episodes 20000``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

import mrlm.envs
from mrlm.envs.math import TOPICS

REPLIES = [f"The answer is \\boxed{{{n}}}" for n in range(97)]


def measure(episodes: int, use_wrappers: bool = True, **kwargs: Any) -> dict[str, float]:
    env = mrlm.envs.make("mrlm/Math-v0", **kwargs)
    if not use_wrappers:
        env = env.unwrapped
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=episode)
        env.step(REPLIES[episode % len(REPLIES)])
    elapsed = time.perf_counter() - start
    return {
        "episodes": episodes,
        "seconds": round(elapsed, 4),
        "episodes_per_s": round(episodes / elapsed, 1),
    }


def gsm8k_records(count: int) -> list[dict[str, str]]:
    """Synthetic GSM8K-format records (nothing is downloaded)."""
    return [
        {
            "question": f"Sam has {n} apples and buys {n + 3} more. How many apples does Sam have?",
            "answer": f"Sam has {n} + {n + 3} = <<{n}+{n + 3}={2 * n + 3}>>{2 * n + 3} apples.\n#### {2 * n + 3}",
        }
        for n in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20_000)
    args = parser.parse_args()
    measure(200)  # warm-up: imports, first-call caches
    per_topic = max(1, args.episodes // len(TOPICS))
    result = {
        "benchmark": "math_reset_step",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "gymnasium_make": measure(args.episodes),
        "unwrapped": measure(args.episodes, use_wrappers=False),
        "by_topic": {topic: measure(per_topic, topics=topic)["episodes_per_s"] for topic in TOPICS},
        "records_gsm8k": measure(args.episodes, records=gsm8k_records(500)),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
