"""Benchmark scripts run and print one JSON object (their numbers are read by people, not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

#: Arguments that make each benchmark a quick smoke run.
SMOKE_ARGS: dict[str, list[str]] = {
    "env_throughput.py": ["--episodes", "50"],
    "sandbox_throughput.py": ["--executions", "20", "--baseline-executions", "4", "--concurrency", "2"],
    "code_env_throughput.py": ["--steps", "10", "--baseline-steps", "2", "--rounds", "1", "--threads", "2"],
    "grpo_throughput.py": ["--steps", "3", "--library", "mrlm"],
    "magrpo_throughput.py": ["--steps", "2", "--warmup-steps", "1", "--sizes", "32x2", "--library", "mrlm"],
    "magrpo_lora_memory.py": ["--size", "32x2", "--steps", "1", "--configs", "lora:1", "lora:2"],
    "ppo_throughput.py": ["--steps", "3", "--warmup-steps", "1"],
    "remote_latency.py": [
        *["--steps", "100", "--duration", "0.3", "--clients", "1,8", "--vector-envs", "8", "--rounds", "1"],
        *["--scaling-clients", "1,2", "--client-processes", "2"],
    ],
}


def test_every_benchmark_has_smoke_arguments() -> None:
    assert sorted(SMOKE_ARGS) == sorted(p.name for p in BENCHMARKS.glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKE_ARGS))
def test_benchmark_prints_json(name: str) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *SMOKE_ARGS[name]],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert isinstance(report, dict) and report
    if name == "remote_latency.py":  # the client processes ran, one on each server of the list
        listed = report["scaling"]["client_processes_2"]["2_addresses"]
        assert listed["calls_per_s"] > 0 and sorted(listed["sessions_per_server"].values()) == [1, 1]
    if name == "code_env_throughput.py":  # per-problem times: the slowest first, of problems played
        from mrlm.envs.code.problems import builtin_tasks

        env = report["code_env"]
        slowest = list(env["slowest_problems_step_ms"].items())
        assert 1 <= len(slowest) <= 5
        assert {task for task, _ in slowest} <= {task.task_id for task in builtin_tasks()}
        assert [ms for _, ms in slowest] == sorted((ms for _, ms in slowest), reverse=True)
        assert slowest[0][1] >= env["step_ms_median_per_problem"] > 0


def test_code_env_benchmark_refuses_zero_steps() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "code_env_throughput.py"), "--steps", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2 and "--steps must be at least 1, got 0" in result.stderr
