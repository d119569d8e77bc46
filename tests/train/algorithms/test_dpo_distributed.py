"""DPO launched as users launch it on two processes (torchrun, gloo on CPU): DDP and FSDP equal one
process on the whole batch; online DPO runs and resumes under DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from mrlm.train.cli import main

pytestmark = pytest.mark.slow

RECORDS = [
    {"prompt": "What is 2+2?", "chosen": " 4", "rejected": " 5"},
    {"prompt": "Capital of France?", "chosen": " Paris", "rejected": " Rome"},
    {"prompt": "Name a colour.", "chosen": " Blue.", "rejected": " Seven."},
    {"prompt": "Count:", "chosen": " 1 2 3", "rejected": " 3 2 1 0"},
]
# Batches of 3 pairs: the processes hold 2 and 1, so the global normaliser and the padding
# micro-batch of the shorter process are exercised. Adam's large epsilon keeps float-level gradient differences from becoming full-size steps.
COMMON = ["--batch-size", "3", "--micro-batch-size", "1", "--beta", "0.5", "--run.max-steps", "3"]
COMMON += ["--optim.learning-rate", "3e-3", "--optim.adam-eps", "1e-3", "--run.no-progress-bar"]


def _torchrun(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [*command, "-m", "mrlm.train.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _assert_same_run(single: Path, launched: Path) -> None:
    for one, two in zip(_metrics(single), _metrics(launched), strict=True):
        for key in (
            "loss",
            "rewards/chosen",
            "rewards/margins",
            "rewards/accuracies",
            "logps/rejected",
            "pairs",
        ):
            assert two[key] == pytest.approx(one[key], rel=1e-4, abs=1e-6), key
    first = AutoModelForCausalLM.from_pretrained(single / "final").state_dict()
    second = AutoModelForCausalLM.from_pretrained(launched / "final").state_dict()
    from mrlm.train.policy import ModelConfig, load_policy

    initial = load_policy(ModelConfig(name_or_path="tiny"))[0].state_dict()
    for name, weight in first.items():
        moved = float((weight - initial[name]).abs().max())
        assert float((weight - second[name]).abs().max()) <= 1e-3 * moved + 1e-7, name


@pytest.mark.parametrize(
    ("strategy", "reference"), [("ddp", "model"), ("fsdp", "model"), ("ddp", "precomputed")], ids=str
)
def test_two_processes_equal_one(tmp_path: Path, strategy: str, reference: str) -> None:
    data = tmp_path / "prefs.jsonl"
    data.write_text("".join(json.dumps(record) + "\n" for record in RECORDS))
    args = ["dpo", "--data", str(data), "--reference", reference, *COMMON]
    assert main([*args, "--run.output-dir", str(tmp_path / "one")]) == 0
    launched = _torchrun(*args, "--run.output-dir", str(tmp_path / "two"), "--dist.strategy", strategy)
    assert launched.returncode == 0, launched.stderr[-4000:]
    _assert_same_run(tmp_path / "one", tmp_path / "two")
    if reference == "precomputed":  # the scores come back from the checkpoint on resume
        resumed = _torchrun(
            *args, "--run.output-dir", str(tmp_path / "two"), "--run.resume", "latest", "--run.max-steps", "4"
        )
        assert resumed.returncode == 0, resumed.stderr[-4000:]
        assert [row["step"] for row in _metrics(tmp_path / "two")] == [1, 2, 3, 4]


def test_online_dpo_runs_and_resumes_under_ddp(tmp_path: Path) -> None:
    args = ["online-dpo", "--env-id", "mrlm/Writing-v0", "--group-size", "4", "--prompts-per-round", "1"]
    args += ["--batch-size", "2", "--micro-batch-size", "1", "--max-new-tokens", "8", "--resample-every", "2"]
    args += ["--run.output-dir", str(tmp_path / "run"), "--run.no-progress-bar"]
    first = _torchrun(*args, "--run.max-steps", "3")
    assert first.returncode == 0, first.stderr[-4000:]
    resumed = _torchrun(*args, "--run.max-steps", "4", "--run.resume", "latest")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    rows = _metrics(tmp_path / "run")
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert all(row["pairs"] == 2.0 for row in rows)  # one pair from each process per step
    assert rows[2]["reward"] == rows[3]["reward"]  # steps 3 and 4 share round 1, across the resume
    assert torch.isfinite(torch.tensor([row["loss"] for row in rows])).all()
