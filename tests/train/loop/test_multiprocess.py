"""Two processes on CPU, launched as users launch them: DDP and FSDP match one process exactly.

Each launch runs ``driver.py`` (the tiny model on a fixed global batch split over the processes)
and reads the per-process JSON reports it writes. ``torchrun --standalone`` picks a free port by
itself; ``accelerate launch`` gets one found here.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.train.loop.driver import Options, global_batch, train

DRIVER = Path(__file__).with_name("driver.py")
ROOT = Path(__file__).resolve().parents[3]
STEPS = 4
TOLERANCE = 1e-5

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCELERATE_")}
    return {**env, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _torchrun() -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def _accelerate(*flags: str) -> list[str]:
    return [
        sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()), *flags,
    ]  # fmt: skip


def _launch(launcher: list[str], tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        *launcher,
        str(DRIVER),
        "--output-dir",
        str(tmp / "run"),
        "--report-dir",
        str(tmp / "reports"),
        *args,
    ]
    return subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=180, check=False
    )


def _reports(result: subprocess.CompletedProcess[str], tmp: Path) -> list[dict[str, Any]]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return [json.loads((tmp / "reports" / f"rank-{rank}.json").read_text()) for rank in range(2)]


def _assert_losses_match(reports: list[dict[str, Any]], reference: dict[str, Any], tolerance: float) -> None:
    expected = reference["losses"]
    for report in reports:
        got = report["losses"]
        assert [r["step"] for r in got] == [r["step"] for r in expected]
        for mine, theirs in zip(got, expected, strict=True):
            assert math.isclose(mine["loss"], theirs["loss"], rel_tol=0, abs_tol=tolerance), (mine, theirs)
            assert math.isclose(mine["grad_norm"], theirs["grad_norm"], rel_tol=0, abs_tol=tolerance)
            assert mine["lr"] == theirs["lr"]
    # Both processes report the same mean loss, and each process saw a different half of the batch.
    assert [r["loss"] for r in reports[0]["losses"]] == [r["loss"] for r in reports[1]["losses"]]
    assert reports[0]["losses"][0]["local_loss"] != reports[1]["losses"][0]["local_loss"]


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The one-process reference: the whole global batch in one process (in this process)."""
    tmp = tmp_path_factory.mktemp("single")
    report = train(
        Options(
            output_dir=str(tmp / "run"),
            report_dir=str(tmp / "reports"),
            strategy="single",
            steps=STEPS,
            final=True,
        )
    )
    losses = [r["loss"] for r in report["losses"]]
    assert losses == sorted(losses, reverse=True)  # the fixed batch is being learned
    return {**report, "final": tmp / "run" / "final"}


@pytest.fixture(scope="module")
def fsdp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    """Two processes with FSDP, checkpoints at steps 2 and 4, and the final model saved."""
    tmp = tmp_path_factory.mktemp("fsdp")
    result = _launch(
        _torchrun(), tmp, "--strategy", "fsdp", "--steps", str(STEPS), "--save-every", "2", "--final"
    )
    return _reports(result, tmp), tmp / "run"


def test_ddp_matches_one_process(tmp_path: Path, single: dict[str, Any]) -> None:
    # accelerate's launcher; each process accumulates two micro-batches, the first under no_sync().
    result = _launch(
        _accelerate("--multi_gpu"),
        tmp_path,
        "--strategy",
        "ddp",
        "--steps",
        str(STEPS),
        "--accumulation",
        "2",
    )
    reports = _reports(result, tmp_path)
    for rank, report in enumerate(reports):
        assert (report["rank"], report["world_size"], report["strategy"]) == (rank, 2, "ddp")
        assert report["wrapper"] == "DistributedDataParallel"
        assert report["distributed_type"] == "DistributedType.MULTI_CPU"
    _assert_losses_match(reports, single, TOLERANCE)


def test_fsdp_shards_and_matches_one_process(
    fsdp_run: tuple[list[dict[str, Any]], Path], single: dict[str, Any]
) -> None:
    reports, _ = fsdp_run
    for rank, report in enumerate(reports):
        assert (report["rank"], report["world_size"], report["strategy"]) == (rank, 2, "fsdp")
        assert report["wrapper"].startswith("FSDP")
    shards = [report["shards"] for report in reports]
    assert shards[0].keys() == shards[1].keys() and len(shards[0]) > 10
    for name, shard in shards[0].items():
        other = shards[1][name]
        assert shard["type"] == other["type"] == "DTensor", name
        assert shard["local"] + other["local"] == shard["full"], name  # two disjoint halves
        assert abs(shard["local"] - shard["full"] / 2) <= shard["full"] / 2 / 8 + 64, (name, shard)
    total = sum(shard["full"] for shard in shards[0].values())
    assert sum(shard["local"] for shard in shards[0].values()) == pytest.approx(total / 2, rel=0.02)
    _assert_losses_match(reports, single, TOLERANCE)


def test_fsdp_final_model_loads_with_transformers(
    fsdp_run: tuple[list[dict[str, Any]], Path], single: dict[str, Any]
) -> None:
    from transformers import AutoModelForCausalLM

    _, run = fsdp_run
    sharded = AutoModelForCausalLM.from_pretrained(run / "final")
    reference = AutoModelForCausalLM.from_pretrained(single["final"])
    ids = global_batch(512)
    with torch.no_grad():
        torch.testing.assert_close(
            sharded(input_ids=ids).logits, reference(input_ids=ids).logits, rtol=0, atol=1e-4
        )


def test_fsdp_checkpoint_resumes_exactly(tmp_path: Path, fsdp_run: tuple[list[dict[str, Any]], Path]) -> None:
    reports, run = fsdp_run
    checkpoint = run / "checkpoints" / "step-000002"
    assert sorted(p.name for p in (checkpoint / "state").glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp"]
    result = _launch(
        _torchrun(), tmp_path, "--strategy", "fsdp", "--steps", str(STEPS), "--resume", str(checkpoint)
    )
    resumed = _reports(result, tmp_path)
    for rank in range(2):
        assert resumed[rank]["extra_state"] == {"next_step": 3}
        expected = reports[rank]["losses"][2:]
        got = resumed[rank]["losses"]
        assert [r["step"] for r in got] == [3, 4]
        for mine, theirs in zip(got, expected, strict=True):
            assert math.isclose(mine["loss"], theirs["loss"], rel_tol=0, abs_tol=1e-6), (mine, theirs)
            assert math.isclose(mine["local_loss"], theirs["local_loss"], rel_tol=0, abs_tol=1e-6)


def test_fsdp_resume_of_a_changed_checkpoint_is_refused(
    tmp_path: Path, fsdp_run: tuple[list[dict[str, Any]], Path]
) -> None:
    # The processes split the hashing; whichever finds the change, every one stops, none loads.
    _, run = fsdp_run
    checkpoint = tmp_path / "step-000002"
    shutil.copytree(run / "checkpoints" / "step-000002", checkpoint)
    shard = checkpoint / "state" / "__1_0.distcp"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    result = _launch(
        _torchrun(), tmp_path, "--strategy", "fsdp", "--steps", str(STEPS), "--resume", str(checkpoint)
    )
    assert result.returncode != 0
    assert "state/__1_0.distcp does not match manifest.json (SHA-256 differs)" in result.stderr
    assert not (tmp_path / "reports").exists()


def test_accelerate_fsdp_plugin_is_refused(tmp_path: Path) -> None:
    # accelerate's FSDP on CPU would silently train one unsharded copy per process.
    result = _launch(
        _accelerate("--use_fsdp", "--fsdp_version", "2"), tmp_path, "--strategy", "fsdp", "--steps", "1"
    )
    assert result.returncode != 0
    assert "ACCELERATE_USE_FSDP=true (accelerate launch --use_fsdp)" in result.stdout + result.stderr
    assert not (tmp_path / "reports").exists()


def test_accelerate_cpu_launch_is_one_process_and_refused(tmp_path: Path) -> None:
    # `accelerate launch --cpu --num_processes 2` starts a single process; ddp must not pass for two.
    result = _launch(_accelerate("--cpu"), tmp_path, "--strategy", "ddp", "--steps", "1")
    assert result.returncode != 0
    assert "strategy='ddp' needs several processes" in result.stdout + result.stderr


def test_fsdp_checkpoint_resumes_in_one_process(
    tmp_path: Path, fsdp_run: tuple[list[dict[str, Any]], Path]
) -> None:
    # DCP reshards: the two halves saved under FSDP load into one unsharded model.
    reports, run = fsdp_run
    with pytest.warns(UserWarning, match="saved by 2 processes"):
        resumed = train(
            Options(
                output_dir=str(tmp_path / "run"),
                report_dir=str(tmp_path / "reports"),
                strategy="single",
                steps=STEPS,
                resume=str(run / "checkpoints" / "step-000002"),
            )
        )
    assert resumed["extra_state"] == {"next_step": 3}
    for mine, theirs in zip(resumed["losses"], reports[0]["losses"][2:], strict=True):
        assert math.isclose(mine["loss"], theirs["loss"], rel_tol=0, abs_tol=TOLERANCE), (mine, theirs)
