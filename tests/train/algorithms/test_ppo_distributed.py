"""PPO on two processes (torchrun, gloo on CPU): DDP and FSDP equal one process, and FSDP resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.train.algorithms.ppo_driver import run as run_driver

ROOT = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("ppo_driver.py")


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCELERATE_")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _torchrun(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
    return subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("strategy", "critic"), [("ddp", "value_head"), ("fsdp", "value_head"), ("fsdp", "model")]
)
def test_two_processes_match_one_process(strategy: str, critic: str, tmp_path: Path) -> None:
    """Two steps on two-turn episodes with a reference in the reward, recomputed log-probs, global
    whitening and two epochs: each process's metrics and the trained weights (policy, and critic or
    value head; sharded under FSDP) equal those of one process on the whole batch."""
    single = run_driver(str(tmp_path / "single"), str(tmp_path / "single-report"), "single", critic)
    args = [str(DRIVER), "--output-dir", str(tmp_path / "run"), "--report-dir", str(tmp_path / "reports")]
    result = _torchrun(*args, "--strategy", strategy, "--critic", critic)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    for rank in range(2):
        report: dict[str, Any] = json.loads((tmp_path / "reports" / f"rank-{rank}.json").read_text())
        assert report["step"] == 2
        for ours, theirs in zip(report["metrics"], single["metrics"], strict=True):
            for key, value in theirs.items():
                assert ours[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
        if rank == 0:
            assert set(report["digest"]) == set(single["digest"])
            for name, value in single["digest"].items():
                assert report["digest"][name] == pytest.approx(value, rel=1e-4, abs=1e-8), name


ARGS = ["ppo", "--env-kwargs", '{"level": 1}', "--prompts-per-step", "2", "--group-size", "2"]
ARGS += ["--max-new-tokens", "6", "--mini-batch-size", "2", "--micro-batch-size", "2", "--kl-coef", "0.05"]
ARGS += ["--run.save-every", "2", "--run.no-progress-bar", "--dist.strategy", "fsdp"]


@pytest.mark.slow
def test_the_cli_trains_under_fsdp_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cli = ["-m", "mrlm.train.cli", *ARGS, "--critic", "model", "--run.output-dir", str(out)]
    first = _torchrun(*cli, "--run.max-steps", "2")
    assert first.returncode == 0, first.stderr[-4000:]
    assert first.stdout.count("final model:") == 2
    for name in ("policy", "critic"):
        assert json.loads((out / "final" / name / "config.json").read_text())["model_type"] == "qwen2"
    resumed = _torchrun(*cli, "--run.max-steps", "4", "--run.resume", "latest")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert all("grad_norm/critic" in row for row in rows)
