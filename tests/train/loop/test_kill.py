"""A process killed while saving a checkpoint leaves the previous one intact and usable."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mrlm.train.loop import latest_checkpoint
from tests.train.loop.driver import HANG_SENTINEL, Options, train

DRIVER = Path(__file__).with_name("driver.py")


@pytest.mark.slow
def test_killed_while_saving_keeps_the_previous_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # The driver saves every step; the save of step 2 stops just before its meta.json.
    process = subprocess.Popen(
        [
            sys.executable,
            str(DRIVER),
            "--output-dir",
            str(out),
            "--report-dir",
            str(tmp_path / "r"),
            "--strategy",
            "single",
            "--steps",
            "3",
            "--save-every",
            "1",
            "--hang-at-save",
            "2",
        ],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / HANG_SENTINEL).exists():
            assert process.poll() is None, process.communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "the driver never reached the save of step 2"
            time.sleep(0.1)
    finally:
        process.kill()  # SIGKILL: no cleanup runs
        process.wait()

    checkpoints = out / "checkpoints"
    partial = checkpoints / ".tmp-step-000002"
    assert (partial / "state" / ".metadata").is_file() and not (partial / "meta.json").exists()
    assert not (partial / "manifest.json").exists()
    assert latest_checkpoint(out) == checkpoints / "step-000001"

    # A new run resumes from step 1, cleans up the partial save, and continues exactly.
    resumed = train(
        Options(
            output_dir=str(out),
            report_dir=str(tmp_path / "r2"),
            strategy="single",
            steps=3,
            save_every=1,
            resume="latest",
        )
    )
    assert resumed["extra_state"] == {"next_step": 2}
    assert not partial.exists()
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-000001", "step-000002", "step-000003"]
    straight = train(
        Options(
            output_dir=str(tmp_path / "straight"), report_dir=str(tmp_path / "r3"), strategy="single", steps=3
        )
    )
    assert resumed["losses"] == straight["losses"][1:]
