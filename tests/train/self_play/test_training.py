"""Self-play in the multi-agent trainers, end to end: opponents from the pool, win rates in the
metrics, exact resume with the pool, and settings or checkpoints that do not fit refused."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from mrlm.train.algorithms import magrpo
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.loop import CheckpointError, OptimConfig, RunConfig
from mrlm.train.loop import checkpoint as ckpt
from mrlm.train.self_play.opponents import NO_POOL, WITH_POOL, pool_size_changed
from mrlm.train.self_play.training import METRICS
from tests.train.self_play.games import Longer


def _config(output_dir: Path, **changes: Any) -> MAGRPOConfig:
    settings: dict[str, Any] = {
        "credit": "agent",
        "group_size": 2,
        "prompts_per_step": 2,
        "max_new_tokens": 4,
        "opponent_pool": 3,
        "snapshot_every": 1,
        "eval_every": 1,
        "eval_tasks": 2,
        "run": RunConfig(output_dir=str(output_dir), max_steps=3, progress_bar=False),
    }
    settings.update(changes)
    return MAGRPOConfig(**settings)


def _metrics(output_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (output_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_debate_run_against_the_pool_logs_win_rates(tmp_path: Path) -> None:
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=2, progress_bar=False)
    config = _config(
        tmp_path / "run",
        env_id="mrlm/Debate-v0",
        env_kwargs='{"rounds": 2}',
        max_turns=2,
        max_new_tokens=6,
        eval_every=2,
        eval_tasks=1,
        run=run,
    )
    magrpo.train(config)
    first, second = _metrics(tmp_path / "run")
    assert first["opponent/snapshot_step"] == 0.0  # step 1: only the initial policy is in the pool
    assert second["opponent/snapshot_step"] in (0.0, 1.0)
    assert "win_rate/initial" not in first  # evaluated every 2 steps
    for key in ("win_rate/initial", "win_rate/rule"):
        assert 0.0 <= second[key] <= 1.0
    for row in (first, second):  # one task per seat: both sides learn every step
        assert {"agent/pro/reward", "agent/con/reward"} <= set(row)


@pytest.mark.slow
def test_a_resumed_run_draws_the_same_opponents_with_the_same_weights(tmp_path: Path) -> None:
    """Three steps straight, or two then a resume: the same metrics and final weights, since the
    checkpoint holds the pool (steps 0 and 1 at step 2)."""
    run = RunConfig(output_dir=str(tmp_path / "a"), max_steps=3, progress_bar=False, seed=1)
    magrpo.train(_config(tmp_path / "a", run=run), env=Longer)
    straight = _metrics(tmp_path / "a")
    # With seed 1 the third step draws the snapshot of step 1, which only a restored pool holds.
    assert [row["opponent/snapshot_step"] for row in straight] == [0.0, 1.0, 1.0]
    first = dataclasses.replace(run, output_dir=str(tmp_path / "b"), max_steps=2, save_every=2)
    magrpo.train(_config(tmp_path / "b", run=first), env=Longer)
    saved = torch.load(
        tmp_path / "b" / ckpt.CHECKPOINTS / ckpt.checkpoint_name(2) / ckpt.rank_file(0), weights_only=True
    )
    assert saved["extra_state"]["self_play"]["pool"]["steps"] == [0, 1]
    magrpo.train(
        _config(tmp_path / "b", run=dataclasses.replace(first, max_steps=3, resume="latest")), env=Longer
    )
    resumed = _metrics(tmp_path / "b")
    assert [row["step"] for row in resumed] == [1, 2, 3]
    for a, b in zip(straight, resumed, strict=True):
        for key in ("reward", "opponent/snapshot_step", "win_rate/initial", "win_rate/rule"):
            assert a[key] == b[key], key
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)
    weights_a = load_file(tmp_path / "a" / "final" / "model.safetensors")
    weights_b = load_file(tmp_path / "b" / "final" / "model.safetensors")
    assert all(torch.allclose(weights_a[name], weights_b[name], atol=1e-6) for name in weights_a)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("saved", "resumed", "message"),
    [(0, 2, NO_POOL), (2, 0, WITH_POOL), (2, 3, pool_size_changed(2, 3))],
    ids=["none-then-pool", "pool-then-none", "another-size"],
)
def test_a_checkpoint_with_another_opponent_pool_setting_is_refused(
    tmp_path: Path, saved: int, resumed: int, message: str
) -> None:
    """Saved without a pool and resumed with one, the reverse, or with a pool of another size (whose
    draws would differ from the saved run's): refused before any step, so the run keeps its one
    step and its one checkpoint."""
    run = RunConfig(output_dir=str(tmp_path), max_steps=1, save_every=1, progress_bar=False)
    tiny = {"prompts_per_step": 1, "eval_every": 0}
    magrpo.train(_config(tmp_path, opponent_pool=saved, run=run, **tiny), env=Longer)
    again = dataclasses.replace(run, max_steps=2, resume="latest")
    with pytest.raises(CheckpointError, match=f"^{re.escape(message)}$"):
        magrpo.train(_config(tmp_path, opponent_pool=resumed, run=again, **tiny), env=Longer)
    assert [row["step"] for row in _metrics(tmp_path)] == [1]
    assert [step for step, _ in ckpt.list_checkpoints(tmp_path)] == [1]


@pytest.mark.slow
def test_plain_self_play_logs_win_rates_and_no_opponent(tmp_path: Path) -> None:
    """No pool: the policy plays both seats. With a learning rate of 0 the policy is its initial
    weights, so (greedy, both seats per task) each game it wins from one seat it loses from the other."""
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    config = _config(tmp_path / "run", opponent_pool=0, optim=OptimConfig(learning_rate=0.0), run=run)
    magrpo.train(config, env=Longer)
    [row] = _metrics(tmp_path / "run")
    assert 0.0 <= row["win_rate/initial"] <= 0.5
    assert 0.0 <= row["win_rate/rule"] <= 1.0
    assert "opponent/snapshot_step" not in row
    assert {"agent/north/reward", "agent/south/reward"} <= set(row)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"policies": "per_agent"}, "need policies='shared'"),
        ({"credit": "team"}, "use credit='agent'"),
        ({"opponent_pool": -1}, r"^opponent_pool must be 0 \(off\) or positive, got -1$"),
        ({"eval_every": -2}, r"^eval_every must be 0 \(off\) or positive, got -2$"),
        ({"snapshot_every": 0}, "^snapshot_every must be at least 1, got 0$"),
        ({"eval_tasks": 0}, "^eval_tasks must be at least 1, got 0$"),
    ],
)
def test_settings_that_do_not_fit_are_refused(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path / "run", **changes)


def test_team_credit_is_fine_without_self_play(tmp_path: Path) -> None:
    assert _config(tmp_path / "run", credit="team", opponent_pool=0, eval_every=0).credit == "team"


def test_the_self_play_metrics_are_documented() -> None:
    text = (Path(__file__).parents[3] / "docs" / "multi_agent.md").read_text()
    for name in METRICS:
        assert f"| `{name}` |" in text, name
