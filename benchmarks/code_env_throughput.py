"""Steps per second of ``mrlm/Code-v0`` played one episode at a time through ``gymnasium.make``,
against a fresh ``python`` subprocess per reply running the same tests unsandboxed. Prints JSON.

Each episode resets a built-in problem by its id and answers with that problem's reference solution
(plus a comment that makes every reply's text unique, as sampled replies are), so every step runs
the whole test suite of its problem in the sandbox. The baseline writes the reference solution and
the same tests to one file and runs ``python -c``-style in a new interpreter, which is what testing
a reply costs without a sandbox. Both run in one process, alternating in rounds, so that whatever
else the machine is doing weighs on both alike.

Run: ``uv run python benchmarks/code_env_throughput.py --steps 600 --rounds 3`` (``--threads 4``: four
envs stepping at once, each one episode at a time, as a trainer's rollout workers would).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium

import mrlm.envs  # noqa: F401  (registers the ids)
from mrlm.envs.code.problems import builtin_tasks


def replies() -> list[tuple[str, str]]:
    """(task id, reply) for every built-in problem, the reply being its reference solution. Episodes
    are reset by task id, which every version of the env takes, so that a run against an older
    checkout (its sources first on ``PYTHONPATH``) steps the same problems."""
    return [(task.task_id, task.canonical_solution) for task in builtin_tasks() if task.canonical_solution]


def sandboxed(
    pairs: list[tuple[str, str]],
    steps: int,
    counter: list[int],
    threads: int = 1,
    step_seconds: dict[str, list[float]] | None = None,
) -> tuple[float, int]:
    """Seconds for ``steps`` single-step episodes, and how many scored full reward; with ``threads``
    > 1, that many envs step their own episodes at the same time (steps split between them). Each
    step's seconds go to ``step_seconds`` under its problem's id, when given."""
    task_ids = {task.canonical_solution: task.task_id for task in builtin_tasks()}
    envs = [gymnasium.make("mrlm/Code-v0") for _ in range(threads)]
    first = counter[0]
    counter[0] += steps

    def play(index: int) -> int:
        env, solved = envs[index], 0
        for number in range(first + index, first + steps, threads):
            task_id, solution = pairs[number % len(pairs)]
            env.reset(options={"task_id": task_id})
            start = time.perf_counter()
            _, reward, _, _, _ = env.step(f"```python\n# reply {number}\n{solution}\n```")
            if step_seconds is not None:
                step_seconds.setdefault(task_ids[solution], []).append(time.perf_counter() - start)
            solved += reward == 1.0
        return solved

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as executor:
        solved = sum(executor.map(play, range(threads)))
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return elapsed, solved


def fresh_python(pairs: list[tuple[str, str]], steps: int, counter: list[int]) -> tuple[float, int]:
    """Seconds for ``steps`` runs of the same tests in a new interpreter each, and how many passed."""
    tasks = {task.canonical_solution: task for task in builtin_tasks()}
    passed = 0
    start = time.perf_counter()
    for _ in range(steps):
        _, solution = pairs[counter[0] % len(pairs)]
        counter[0] += 1
        task = tasks[solution]
        program = "\n".join(
            [f"# run {counter[0]}", solution, task.test_setup, *(step.code for step in task.steps)]
        )
        done = subprocess.run([sys.executable, "-I", "-S", "-c", program], capture_output=True, check=False)
        passed += done.returncode == 0
    return time.perf_counter() - start, passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=600, help="episodes per round for the sandboxed env")
    parser.add_argument("--baseline-steps", type=int, default=100, help="runs per round for fresh python")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, default=1, help="envs stepping at once (1: one episode at a time)"
    )
    args = parser.parse_args()
    for name in ("steps", "baseline_steps", "rounds", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    pairs = replies()
    counter = [0]
    sandboxed(pairs, 30, counter)  # warm-up: workers, caches
    env_rates, base_rates, env_solved, base_passed = [], [], 0, 0
    step_seconds: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        seconds, solved = sandboxed(pairs, args.steps, counter, args.threads, step_seconds)
        env_rates.append(args.steps / seconds)
        env_solved += solved
        seconds, passed = fresh_python(pairs, args.baseline_steps, counter)
        base_rates.append(args.baseline_steps / seconds)
        base_passed += passed
    env_rate, base_rate = statistics.median(env_rates), statistics.median(base_rates)
    step_ms = {task: 1000 * statistics.median(times) for task, times in step_seconds.items()}
    result = {
        "benchmark": "code_env_steps",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg": [round(value, 2) for value in os.getloadavg()],
        "problems": len(pairs),
        "code_env": {
            "steps_per_round": args.steps,
            "threads": args.threads,
            "steps_per_s_median": round(env_rate, 1),
            "steps_per_s_rounds": [round(rate, 1) for rate in env_rates],
            "full_reward_share": round(env_solved / (args.steps * args.rounds), 4),
            "step_ms_median_per_problem": round(statistics.median(step_ms.values()), 2),
            # Where the time goes: the problems whose steps take longest (a test passing a large
            # value, or consuming a long generator, pays per item crossing to the judge).
            "slowest_problems_step_ms": {
                task: round(ms, 1) for task, ms in sorted(step_ms.items(), key=lambda item: -item[1])[:5]
            },
        },
        "fresh_python": {
            "runs_per_round": args.baseline_steps,
            "runs_per_s_median": round(base_rate, 1),
            "runs_per_s_rounds": [round(rate, 1) for rate in base_rates],
            "passed_share": round(base_passed / (args.baseline_steps * args.rounds), 4),
        },
        "speedup": round(env_rate / base_rate, 2),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
