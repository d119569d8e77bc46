"""Executions per second of a small HumanEval-style test program: the sandbox against a fresh
``python`` subprocess per execution (what one would write without a sandbox). Prints JSON.

Both run the same program with the same number of client threads, in one run, alternating in
rounds so that whatever else the machine is doing weighs on both alike. Each execution's source
differs by a comment, as solutions sampled from a model would, so that the sandbox's cache of
compiled programs never helps (``--same-program`` measures the case where it does: a fixed test
harness given its input on stdin, say).

Run: ``uv run python benchmarks/sandbox_throughput.py --executions 3000 --concurrency 8``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from mrlm.envs.sandbox import Limits, Sandbox

PROGRAM = """
from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False


assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3)
assert not has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05)
assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95)
assert not has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.8)
print("passed")
"""


class Measurement:
    """Executions timed from several client threads, possibly over several rounds."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.failures = 0
        self.seconds = 0.0
        self._lock = threading.Lock()

    def add_round(self, run_one: Callable[[], bool], executions: int, concurrency: int) -> None:
        def timed(_: int) -> None:
            start = time.perf_counter()
            ok = run_one()
            elapsed = time.perf_counter() - start
            with self._lock:
                self.latencies.append(elapsed)
                self.failures += not ok

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(timed, range(executions)))
        self.seconds += time.perf_counter() - start

    def summary(self) -> dict[str, float]:
        latencies = sorted(self.latencies)
        return {
            "executions": len(latencies),
            "failures": self.failures,
            "seconds": round(self.seconds, 3),
            "executions_per_s": round(len(latencies) / self.seconds, 1),
            "latency_p50_ms": round(statistics.median(latencies) * 1000, 2),
            "latency_p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=3000, help="sandbox executions")
    parser.add_argument("--baseline-executions", type=int, default=200, help="fresh-subprocess executions")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads, both measurements")
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (default: the sandbox's)")
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternations of the two (evens out other load)"
    )
    parser.add_argument("--same-program", action="store_true", help="run the very same source every time")
    args = parser.parse_args()

    sandbox = Sandbox(Limits(wall_time_s=10.0), workers=args.workers)
    isolation = sandbox.isolation
    sandbox.run_many([PROGRAM] * (2 * sandbox.workers))  # warm-up: every worker started and used once

    numbers = itertools.count()

    def program() -> str:
        return PROGRAM if args.same_program else f"{PROGRAM}# execution {next(numbers)}\n"

    def sandboxed() -> bool:
        result = sandbox.run(program())
        return result.ok and result.stdout == "passed\n"

    def fresh_subprocess() -> bool:
        command = [sys.executable, "-c", program()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        return done.returncode == 0 and done.stdout == "passed\n"

    fresh_subprocess()  # warm-up: page cache
    sandboxed_numbers, baseline = Measurement(), Measurement()
    rounds = max(1, args.rounds)
    for round_ in range(rounds):
        share = slice(round_, None, rounds)  # this round's part of each total
        baseline.add_round(fresh_subprocess, len(range(args.baseline_executions)[share]), args.concurrency)
        sandboxed_numbers.add_round(sandboxed, len(range(args.executions)[share]), args.concurrency)
    sandbox.close()

    sandbox_summary, baseline_summary = sandboxed_numbers.summary(), baseline.summary()
    report = {
        "benchmark": "sandbox_throughput",
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "concurrency": args.concurrency,
        "workers": sandbox.workers,
        "rounds": rounds,
        "same_program": args.same_program,
        "sandbox": sandbox_summary,
        "fresh_subprocess": baseline_summary,
        "speedup": round(sandbox_summary["executions_per_s"] / baseline_summary["executions_per_s"], 1),
        "isolation": {"active": list(isolation.active()), **asdict(isolation)},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
