"""Reset+step throughput of the math env with numeric answers, local and in-process. Prints JSON.

Run: ``uv run python benchmarks/env_throughput.py --episodes 20000``
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import mrlm.envs


def measure(episodes: int, level: int | None, use_wrappers: bool) -> dict[str, float]:
    env = mrlm.envs.make("mrlm/Math-v0", level=level)
    if not use_wrappers:
        env = env.unwrapped
    replies = [f"The answer is \\boxed{{{n}}}" for n in range(97)]
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=episode)
        env.step(replies[episode % len(replies)])
    elapsed = time.perf_counter() - start
    return {
        "episodes": episodes,
        "seconds": round(elapsed, 4),
        "episodes_per_s": round(episodes / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20_000)
    args = parser.parse_args()
    measure(200, None, True)  # warm-up: imports, first-call caches
    result = {
        "benchmark": "math_reset_step",
        "python": platform.python_version(),
        "gymnasium_make": measure(args.episodes, None, True),
        "unwrapped": measure(args.episodes, None, False),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
