"""Learning-rate schedules give the hand-computed values, through the session as well."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from mrlm.train.loop.schedule import lr_factor
from tests.train.loop.helpers import session_for

# warmup 2, 6 steps, peak 1: updates 1..6 (s = 0..5). Decay progress p = (s - 2) / 4.
EXPECTED = {
    "constant": [0.5, 1.0, 1.0, 1.0, 1.0, 1.0],
    "linear": [0.5, 1.0, 1.0, 0.75, 0.5, 0.25],
    "cosine": [
        0.5,
        1.0,
        1.0,
        0.5 * (1 + math.cos(math.pi / 4)),  # 0.8535533905932737
        0.5,
        0.5 * (1 + math.cos(3 * math.pi / 4)),  # 0.14644660940672624
    ],
}


@pytest.mark.parametrize("schedule", sorted(EXPECTED))
def test_lr_factor_by_hand(schedule: str) -> None:
    got = [lr_factor(s, schedule=schedule, warmup_steps=2, max_steps=6) for s in range(6)]
    assert got == pytest.approx(EXPECTED[schedule], abs=1e-12)


def test_no_warmup_starts_at_peak_and_ends_positive() -> None:
    assert lr_factor(0, schedule="linear", warmup_steps=0, max_steps=4) == 1.0
    assert lr_factor(3, schedule="linear", warmup_steps=0, max_steps=4) == 0.25
    assert lr_factor(9, schedule="cosine", warmup_steps=0, max_steps=4) == 0.0  # past the end


def test_warmup_longer_than_run() -> None:
    assert [lr_factor(s, schedule="cosine", warmup_steps=4, max_steps=2) for s in range(2)] == [0.25, 0.5]


class Scalar(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0]))


@pytest.mark.parametrize("schedule", sorted(EXPECTED))
def test_session_reports_the_lr_of_each_update(tmp_path: Path, schedule: str) -> None:
    model = Scalar()
    peak = 0.01
    with session_for(
        model,
        tmp_path,
        run={"max_steps": 6},
        optim={"learning_rate": peak, "warmup_steps": 2, "lr_schedule": schedule},
    ) as session:
        lrs = []
        for _ in range(6):
            session.backward((model.w * 2.0).sum())
            lrs.append(session.optimizer_step()["lr"])
        assert session.step == 6
    assert lrs == pytest.approx([peak * f for f in EXPECTED[schedule]], rel=1e-12)
