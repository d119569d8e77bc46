"""MAGRPO with one model per agent, stopped by Ctrl-C after a step's rollout and before its update: the
last finished step is saved as it ended (not as the rollout left the task cursor and the engine),
and the run resumed from it ends with the weights of a run never stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mrlm.envs import DatasetTaskEnv
from mrlm.train.algorithms import magrpo
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.policy import ModelConfig

RECORDS = [{"topic": number} for number in range(40)]


def _team_env() -> DatasetTaskEnv:
    """Two agents; the team earns 1 when their replies hold an odd count of "e": rewards that differ
    within groups for any model, so every step updates both models."""
    return DatasetTaskEnv(
        RECORDS,
        [lambda r: f"Agent one, a word on {r['topic']}.", lambda r: f"Agent two, a word on {r['topic']}."],
        lambda replies, record: float(" ".join(replies).count("e") % 2),
    )


def _config(out: Path, resume: str | None = None) -> MAGRPOConfig:
    return MAGRPOConfig(
        env_id="test/TeamLetters",
        policies="per_agent",
        model=ModelConfig(name_or_path="tiny"),
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=8,
        micro_batch_size=8,
        run=RunConfig(output_dir=str(out), max_steps=4, progress_bar=False, resume=resume),
        optim=OptimConfig(learning_rate=1e-3),
        dist=DistributedConfig(cpu=True),
    )


def _final(out: Path) -> dict[str, torch.Tensor]:
    return {
        f"{path.parent.name}/{name}": value
        for path in sorted((out / "final").glob("*/model.safetensors"))
        for name, value in load_file(path).items()
    }


@pytest.mark.slow
def test_ctrl_c_before_an_update_keeps_the_last_step_and_the_resumed_run_ends_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    magrpo.train(_config(tmp_path / "straight"), env=_team_env)
    rows = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    assert all(row["grad_norm"] > 0 for row in rows)

    update = TrainingSession.optimizer_step
    calls = []

    def ctrl_c_before_update_3(session: TrainingSession) -> dict[str, float]:
        calls.append(1)
        if len(calls) == 3:  # step 3's rollout and losses are done; nothing is updated yet
            raise KeyboardInterrupt
        return update(session)

    with monkeypatch.context() as patch:
        patch.setattr(TrainingSession, "optimizer_step", ctrl_c_before_update_3)
        with pytest.raises(KeyboardInterrupt):
            magrpo.train(_config(tmp_path / "stopped"), env=_team_env)
    assert sorted(path.name for path in (tmp_path / "stopped" / "checkpoints").iterdir()) == ["step-000002"]

    magrpo.train(_config(tmp_path / "stopped", resume="latest"), env=_team_env)
    expected, got = _final(tmp_path / "straight"), _final(tmp_path / "stopped")
    assert len(expected) > 0 and set(got) == set(expected)
    assert {name.split("/")[0] for name in expected} == {"agent_0", "agent_1"}
    assert all(torch.equal(got[name], expected[name]) for name in expected)
