"""The on-policy step every algorithm shares: steps count training steps, metrics are the documented
ones, and two processes with uneven batches update exactly as one process on the whole batch."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.algorithms.grpo import GRPOConfig, old_logprobs, train
from mrlm.train.algorithms.onpolicy import rollout_metrics
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig, TrainingSession
from mrlm.train.policy import load_policy
from mrlm.train.rollout import RolloutEngine, Trajectory, collate
from tests.train.algorithms.update_driver import run as run_update

ROOT = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("update_driver.py")


def test_iterations_of_one_batch_are_one_step_for_metrics_checkpoints_and_max_steps(tmp_path: Path) -> None:
    config = GRPOConfig(
        env_kwargs='{"level": 1}',
        group_size=2,
        prompts_per_step=1,
        max_new_tokens=4,
        micro_batch_size=2,
        num_iterations=2,
        run=RunConfig(output_dir=str(tmp_path / "run"), max_steps=3, save_every=3, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    train(config)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert sorted(path.name for path in (tmp_path / "run" / "checkpoints").iterdir()) == ["step-000003"]
    documented = {"grad_norm", "lr", "entropy", "reply_tokens", "cut_at_length", "kl", "reward/mrlm/Math-v0"}
    assert documented <= set(rows[0])
    assert rows[0]["lr"] == pytest.approx(1e-3)
    assert all(math.isfinite(row["grad_norm"]) for row in rows)  # 0 while every reward is equal
    assert 0 < rows[0]["reply_tokens"] <= 4


def _trajectory(
    env_id: str, logprobs: list[float], mask: list[int], reward: float, reasons: list[str]
) -> Trajectory:
    return Trajectory(
        env_id=env_id,
        seed=0,
        group=0,
        messages=[],
        token_ids=list(range(len(mask))),
        mask=mask,
        logprobs=logprobs,
        turn_rewards=[reward / len(reasons)] * len(reasons),
        finish_reasons=reasons,
    )


class _OneProcess:
    world_size = 1

    def gather_object(self, obj: Any) -> list[Any]:
        return [obj]


def test_rollout_metrics_by_hand() -> None:
    trajectories = [
        _trajectory("a", [0.0, -1.0, -2.0, 0.0], [0, 1, 1, 0], 1.0, ["stop"]),
        _trajectory("a", [0.0, -0.5, -0.5, -3.0], [0, 1, 1, 1], 0.0, ["length"]),
        _trajectory("b", [0.0, -2.0, 0.0, -1.0], [0, 1, 0, 1], 2.0, ["stop", "length"]),
    ]
    metrics = rollout_metrics(_OneProcess(), trajectories)  # type: ignore[arg-type]
    # 4 replies, 2+3+2 = 7 generated tokens, 2 replies cut at the budget.
    assert metrics["reply_tokens"] == pytest.approx(7 / 4)
    assert metrics["cut_at_length"] == pytest.approx(2 / 4)
    # -log p of the sampled tokens: 1 + 2 + 0.5 + 0.5 + 3 + 2 + 1 = 10 over 7 tokens.
    assert metrics["entropy"] == pytest.approx(10 / 7)
    assert metrics["reward/a"] == pytest.approx(0.5) and metrics["success/a"] == pytest.approx(0.5)
    assert metrics["reward/b"] == pytest.approx(2.0) and metrics["success/b"] == pytest.approx(1.0)
    # Turn 1 of all three (rewards 1, 0, 1), turn 2 of the one with two replies (reward 1).
    assert metrics["success/turn1"] == pytest.approx(2 / 3) and metrics["success/turn2"] == 1.0
    single = rollout_metrics(_OneProcess(), trajectories[:2])  # type: ignore[arg-type]
    assert not any(key.startswith("success/turn") for key in single)
    assert metrics["cut_at_max_turns"] == 0.0


def test_episodes_stopped_at_max_turns_are_counted_and_warned_of() -> None:
    trajectories = [_trajectory("a", [0.0, -1.0], [0, 1], 0.0, ["stop"]) for _ in range(4)]
    for t in trajectories[:3]:
        t.truncated, t.truncation = True, "max_turns"
    trajectories[3].truncated, trajectories[3].truncation = True, "env"  # the env's own cut: not ours
    with pytest.warns(RuntimeWarning, match="stopped at max_turns before their env ended them"):
        metrics = rollout_metrics(_OneProcess(), trajectories)  # type: ignore[arg-type]
    assert metrics["cut_at_max_turns"] == pytest.approx(3 / 4)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("single")
    return run_update(str(tmp / "run"), str(tmp / "reports"), "single", "token_mean")


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_processes_with_uneven_batches_match_one_process(
    strategy: str, one_process: dict[str, Any], tmp_path: Path
) -> None:
    """Process 0 holds 4 trajectories, process 1 holds 8 (as dynamic sampling can leave them), with a
    frozen reference (kl_coef > 0), 2 iterations and micro-batches of 2: process 0 pads with
    zero-weight passes, token counts are global, and the update equals one process's on all 12."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command += [str(DRIVER), "--output-dir", str(tmp_path / "run"), "--report-dir", str(tmp_path / "reports")]
    command += ["--strategy", strategy]
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCELERATE_")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    expected = one_process
    for rank in range(2):
        report = json.loads((tmp_path / "reports" / f"rank-{rank}.json").read_text())
        assert report["step"] == 1
        assert report["tokens"] == expected["tokens"]
        for key in ("loss", "kl", "grad_norm"):
            assert report[key] == pytest.approx(expected[key], rel=1e-4), key
        digest = {name.removeprefix("module."): value for name, value in report["digest"].items()}
        if rank == 0:
            for name, value in expected["digest"].items():
                assert digest[name] == pytest.approx(value, rel=1e-3), name


def test_recomputed_old_logprobs_equal_the_samplers(tmp_path: Path) -> None:
    """The training forward gives the log-probs the sampler recorded (same weights, same
    temperature), so recomputing them is a no-op here; a run with the option trains as usual."""
    config = GRPOConfig(
        env_kwargs='{"level": 1}',
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=6,
        micro_batch_size=3,  # a last, shorter micro-batch
        temperature=0.7,
        recompute_old_logprobs=True,
        run=RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    model, tokenizer = load_policy(config.model)
    with TrainingSession(model, run=config.run, optim=config.optim, dist=config.dist) as session:
        engine = RolloutEngine(
            config.env_id,
            HFGenerator(session.unwrapped_model, tokenizer),
            tokenizer,
            SamplingParams(max_new_tokens=6, temperature=0.7, seed=0),
            env_kwargs={"level": 1},
        )
        with engine, session.generation_mode():
            trajectories = engine.collect([1, 2], group_size=2)
        batch = collate(trajectories, tokenizer.pad_token_id)
        recomputed = old_logprobs(session, batch, config)
    assert recomputed.shape == batch.old_logprobs.shape
    masked = batch.mask.bool()
    torch.testing.assert_close(recomputed[masked], batch.old_logprobs[masked], rtol=1e-4, atol=1e-4)
    assert bool((recomputed[~masked] == 0).all())
    train(
        dataclasses.replace(config, run=dataclasses.replace(config.run, output_dir=str(tmp_path / "trained")))
    )
    assert (tmp_path / "trained" / "final" / "config.json").is_file()
