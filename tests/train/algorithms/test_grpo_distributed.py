"""GRPO launched the way users launch it on several processes (torchrun, gloo on CPU)."""

from __future__ import annotations

import json
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


@pytest.mark.slow
def test_grpo_under_fsdp_is_refused_loudly(tmp_path: Path) -> None:
    result = _torchrun(tmp_path / "fsdp", "--dist.strategy", "fsdp")
    assert result.returncode != 0
    assert "GRPO does not generate under FSDP yet" in result.stderr
