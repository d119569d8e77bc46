"""GRPO launched the way users launch it on several processes (torchrun, gloo on CPU)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ARGS = [
    "grpo",
    "--env-kwargs",
    '{"level": 1}',
    "--group-size",
    "4",
    "--prompts-per-step",
    "1",
    "--max-new-tokens",
    "8",
    "--micro-batch-size",
    "4",
    "--run.max-steps",
    "2",
    "--run.no-progress-bar",
]


def _torchrun(output_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command += ["-m", "mrlm.train.cli", *ARGS, "--run.output-dir", str(output_dir), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_grpo_trains_under_ddp_on_two_processes(tmp_path: Path) -> None:
    result = _torchrun(tmp_path / "ddp", "--dist.strategy", "ddp")
    assert result.returncode == 0, result.stderr[-4000:]
    rows = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert (tmp_path / "ddp" / "final" / "config.json").is_file()
    assert result.stdout.count("final model:") == 2  # both processes finished


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_grpo_under_fsdp_matches_ddp_and_resumes(tmp_path: Path) -> None:
    """Each process samples on gathered weights, then trains sharded: the same seeds give the same
    rollouts as DDP, so the same rewards and (up to float reduction order) the same losses."""
    ddp = _torchrun(tmp_path / "ddp", "--dist.strategy", "ddp")
    assert ddp.returncode == 0, ddp.stderr[-4000:]
    fsdp = _torchrun(tmp_path / "fsdp", "--dist.strategy", "fsdp")
    assert fsdp.returncode == 0, fsdp.stderr[-4000:]
    for ddp_row, fsdp_row in zip(_metrics(tmp_path / "ddp"), _metrics(tmp_path / "fsdp"), strict=True):
        assert fsdp_row["reward"] == ddp_row["reward"]
        assert fsdp_row["loss"] == pytest.approx(ddp_row["loss"], abs=1e-5)
    config = json.loads((tmp_path / "fsdp" / "final" / "config.json").read_text())
    assert config["model_type"] == "qwen2"  # saved whole, loadable by transformers

    # Two more steps from the step-2 checkpoint, still sharded.
    resumed = _torchrun(
        tmp_path / "fsdp", "--dist.strategy", "fsdp", "--run.resume", "latest", "--run.max-steps", "4"
    )
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert [row["step"] for row in _metrics(tmp_path / "fsdp")] == [1, 2, 3, 4]


@pytest.mark.slow
def test_grpo_with_a_reference_iterations_and_dynamic_sampling_runs_under_fsdp(tmp_path: Path) -> None:
    """The whole CLI path with the options that interact with sharding: a sharded frozen reference
    (its forward is collective), two optimizer steps per training step, dynamic sampling. (Uneven
    batches across processes are pinned exactly by tests/train/algorithms/test_onpolicy.py.)"""
    result = _torchrun(
        tmp_path / "fsdp",
        "--dist.strategy",
        "fsdp",
        "--kl-coef",
        "0.05",
        "--num-iterations",
        "2",
        "--dynamic-sampling",
        "--max-sampling-rounds",
        "2",
        "--prompts-per-step",
        "2",
        "--micro-batch-size",
        "2",
        "--temperature",
        "1.5",
    )
    assert result.returncode == 0, result.stderr[-4000:]
    rows = _metrics(tmp_path / "fsdp")
    assert [row["step"] for row in rows] == [1, 2]
    assert all(math.isfinite(row["kl"]) and math.isfinite(row["loss"]) for row in rows)
    assert sorted(p.name for p in (tmp_path / "fsdp" / "checkpoints").iterdir()) == ["step-000002"]
