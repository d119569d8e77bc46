"""Online DPO: pairs are each group's best and worst episode; rounds are re-sampled on schedule;
resuming mid-round continues on the same pairs; a run with nothing to prefer says what to change."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mrlm.train.algorithms.online_dpo import NoPreferencePairsError, OnlineDPOConfig, best_worst_pairs, train
from mrlm.train.cli import main
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.rollout import Trajectory


def _trajectory(reward: float, token: int) -> Trajectory:
    return Trajectory(
        env_id="t",
        seed=0,
        group=0,
        messages=[],
        token_ids=[1, 2, token, token],
        mask=[0, 0, 1, 1],
        logprobs=[0.0, 0.0, -1.0, -1.0],
        turn_rewards=[reward],
    )


def test_best_and_worst_of_each_group_by_hand() -> None:
    groups = [
        [_trajectory(0.0, 10), _trajectory(1.0, 11), _trajectory(0.5, 12), _trajectory(1.0, 13)],
        [_trajectory(0.3, 20)] * 4,  # no gap: no pair
        [_trajectory(0.2, 30), _trajectory(0.2, 31), _trajectory(0.25, 32), _trajectory(0.2, 33)],
    ]
    flat = [t for group in groups for t in group]
    pairs = best_worst_pairs(flat, group_size=4, min_gap=1e-6, max_length=16)
    assert [(p.chosen.input_ids[2], p.rejected.input_ids[2]) for p in pairs] == [(11, 10), (32, 30)]
    assert pairs[0].chosen.labels_mask == [0, 0, 1, 1]
    assert len(best_worst_pairs(flat, group_size=4, min_gap=0.1, max_length=16)) == 1  # 0.05 is too small
    assert best_worst_pairs(flat, group_size=4, min_gap=1e-6, max_length=2) == []  # no reply token left


def _config(tmp_path: Path, name: str = "run", **overrides: Any) -> OnlineDPOConfig:
    base: dict[str, Any] = {
        "env_id": "mrlm/Writing-v0",  # graded rewards: even an untrained model's replies differ
        "group_size": 4,
        "prompts_per_round": 2,
        "resample_every": 2,
        "batch_size": 2,
        "micro_batch_size": 1,
        "max_new_tokens": 12,
        "beta": 0.5,
        "run": RunConfig(output_dir=str(tmp_path / name), max_steps=5, progress_bar=False),
        "optim": OptimConfig(learning_rate=1e-3),
    }
    base.update(overrides)
    return OnlineDPOConfig(**base)


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_rounds_resample_on_schedule_and_resume_exactly(tmp_path: Path) -> None:
    train(_config(tmp_path, "a"))
    first = RunConfig(output_dir=str(tmp_path / "b"), max_steps=3, progress_bar=False)
    train(_config(tmp_path, "b", run=first))  # stops mid-round: step 3 is the first of round 1's two
    train(_config(tmp_path, "b", run=dataclasses.replace(first, max_steps=5, resume="latest")))
    a, b = _metrics(tmp_path / "a"), _metrics(tmp_path / "b")
    assert [row["step"] for row in b] == [1, 2, 3, 4, 5]
    # Steps 1-2 train on round 0, 3-4 on round 1, 5 on round 2: the round's metrics change with it.
    assert a[0]["reward"] == a[1]["reward"] and a[2]["reward"] == a[3]["reward"]
    assert len({a[0]["reward"], a[2]["reward"], a[4]["reward"]}) == 3
    assert all(row["round/pairs"] >= 1 for row in a)
    for row_a, row_b in zip(a, b, strict=True):
        for key in ("loss", "reward", "rewards/margins", "logps/chosen"):
            assert row_a[key] == pytest.approx(row_b[key], rel=1e-6, abs=1e-9), key


def test_nothing_to_prefer_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The untrained tiny model never answers a sum: every reply of every group earns 0.
    config = _config(tmp_path, env_id="mrlm/Math-v0", max_sampling_rounds=2)
    with pytest.raises(NoPreferencePairsError, match="no group of 4 replies had a reward gap"):
        train(config)
    args = ["online-dpo", "--env-id", "mrlm/Math-v0", "--group-size", "2", "--prompts-per-round", "1"]
    args += ["--max-sampling-rounds", "1", "--max-new-tokens", "4", "--run.output-dir", str(tmp_path / "cli")]
    assert main([*args, "--run.no-progress-bar"]) == 1
    assert "NoPreferencePairsError: no group of 2 replies" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"reference": "precomputed"}, "online DPO scores fresh pairs"),
        ({"group_size": 1}, "group_size must be at least 2"),
        ({"resample_every": 0}, "resample_every must be at least 1"),
        ({"min_reward_gap": 0.0}, "min_reward_gap must be a finite number > 0, got 0.0"),
        ({"min_reward_gap": float("nan")}, "min_reward_gap must be a finite number > 0, got nan"),
        ({"min_reward_gap": float("inf")}, "min_reward_gap must be a finite number > 0, got inf"),
    ],
)
def test_contradictory_configs_are_refused(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **overrides)
