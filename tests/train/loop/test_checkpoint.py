"""Checkpoints: resuming continues exactly, pruning, and clear errors for missing or broken ones."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from mrlm.train.loop import CheckpointError, TrainingSession, latest_checkpoint, manifest
from mrlm.train.loop.rng import capture_rng_state
from tests.train.loop.helpers import fixed_batch, lm_step, parameters_of, session_for

VOCAB = 512


def _with_dropout(model: torch.nn.Module) -> torch.nn.Module:
    """Turn on attention dropout, so every step also draws from torch's generator."""
    for module in model.modules():
        if hasattr(module, "attention_dropout"):
            setattr(module, "attention_dropout", 0.2)  # noqa: B010 (the attribute is not typed)
    return model


def _sampled_batch() -> torch.Tensor:
    """A batch drawn from all three global generators, as a data sampler would."""
    rows = torch.randint(3, VOCAB, (4, 10))
    start = int(np.random.randint(0, 3))
    rows = rows[:, start : start + 8]
    return rows.flip(1) if random.random() < 0.5 else rows


def _train(session: TrainingSession, until: int, losses: dict[int, float], cursor: dict[str, Any]) -> None:
    while session.step < until:
        loss = lm_step(session, _sampled_batch())
        losses[session.step] = loss
        session.log({"loss": loss})
        cursor["batches"] += 1
        session.maybe_save(dict(cursor))


def _session(model: torch.nn.Module, out: Path, **run: Any) -> TrainingSession:
    return session_for(
        _with_dropout(model),
        out,
        run={"max_steps": 6, "save_every": 3, "seed": 7, **run},
        optim={"warmup_steps": 2, "lr_schedule": "cosine", "weight_decay": 0.1},
    )


def test_resume_continues_exactly(tmp_path: Path, tokenizer) -> None:
    from mrlm.train.tiny import build_tiny_model

    # Uninterrupted: 6 steps.
    straight: dict[int, float] = {}
    model = build_tiny_model(tokenizer)
    with _session(model, tmp_path / "straight") as session:
        _train(session, 6, straight, {"batches": 0})
    expected = parameters_of(model)

    # Interrupted: a run dies after step 4 (checkpoint at 3); a new process resumes from "latest".
    out = tmp_path / "interrupted"
    first: dict[int, float] = {}
    with _session(build_tiny_model(tokenizer), out) as session:
        _train(session, 4, first, {"batches": 0})
    assert latest_checkpoint(out) == out / "checkpoints" / "step-000003"

    resumed: dict[int, float] = {}
    model = build_tiny_model(tokenizer, seed=99)  # other weights: the checkpoint must replace them
    with _session(model, out, resume="latest") as session:
        cursor = session.restore()
        assert cursor == {"batches": 3}
        assert session.step == 3
        _train(session, 6, resumed, cursor)

    assert first == {step: straight[step] for step in (1, 2, 3, 4)}
    assert resumed == {step: straight[step] for step in (4, 5, 6)}  # bitwise: same floats
    got = parameters_of(model)
    assert all(torch.equal(got[name], expected[name]) for name in expected)
    # The metrics file tells one story: step 4 of the dead run was replaced by the resumed one.
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r["loss"] for r in records] == [straight[step] for step in range(1, 7)]
    # Dropout was really on: the same input gives different losses in training mode.
    ids = fixed_batch(VOCAB)
    with torch.no_grad():
        assert model(input_ids=ids, labels=ids).loss != model(input_ids=ids, labels=ids).loss


@pytest.mark.parametrize("schedule", ["constant", "linear"])
def test_a_resumed_run_trains_at_its_own_learning_rate(tmp_path: Path, tokenizer, schedule: str) -> None:
    """The learning rate changes no weight, so a resume may change it: the schedule goes on from the
    saved step, at the rate this run was given (the scheduler's state also holds the saving run's)."""
    from mrlm.train.tiny import build_tiny_model

    ids = fixed_batch(VOCAB)
    run = {"max_steps": 4, "save_every": 2}
    saved = {"learning_rate": 1e-5, "lr_schedule": schedule}
    with session_for(build_tiny_model(tokenizer), tmp_path, run=run, optim=saved) as session:
        for _ in range(2):
            lm_step(session, ids)
            session.maybe_save()
    resumed = {"learning_rate": 1e-3, "lr_schedule": schedule}
    with session_for(
        build_tiny_model(tokenizer), tmp_path, run=run | {"resume": "latest"}, optim=resumed
    ) as session:
        session.restore()
        factor = 1.0 if schedule == "constant" else 2 / 4  # linear decay to 0 over 4 steps, 2 done
        assert [group["lr"] for group in session.optimizer.param_groups] == pytest.approx([1e-3 * factor] * 2)
        lm_step(session, ids)
        factor = 1.0 if schedule == "constant" else 1 / 4
        assert [group["lr"] for group in session.optimizer.param_groups] == pytest.approx([1e-3 * factor] * 2)


def test_a_checkpoint_past_max_steps_is_refused_before_anything_loads(tmp_path: Path, tokenizer) -> None:
    from mrlm.train.tiny import build_tiny_model

    ids = fixed_batch(VOCAB)
    with session_for(build_tiny_model(tokenizer), tmp_path, run={"max_steps": 2, "save_every": 2}) as session:
        for _ in range(2):
            session.log({"loss": lm_step(session, ids)})
            session.maybe_save()
    model = build_tiny_model(tokenizer, seed=5)
    before = parameters_of(model)
    with session_for(model, tmp_path, run={"max_steps": 1, "resume": "latest"}) as session:
        with pytest.raises(CheckpointError, match=r"at step 2, past this run's max_steps \(1\)"):
            session.restore()
        assert session.step == 0
    assert all(torch.equal(parameters_of(model)[name], before[name]) for name in before)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [record["step"] for record in records] == [1, 2]  # nothing dropped
    # The same max_steps is a finished run: nothing to train, nothing refused.
    with session_for(
        build_tiny_model(tokenizer), tmp_path, run={"max_steps": 2, "resume": "latest"}
    ) as session:
        session.restore()
        assert session.step == 2


def test_saving_does_not_disturb_random_streams(tmp_path: Path, fresh_model, tokenizer) -> None:
    with session_for(fresh_model, tmp_path) as session:
        lm_step(session, fixed_batch(VOCAB))
        before = capture_rng_state()
        session.save_checkpoint()
        after = capture_rng_state()
    assert before["python"] == after["python"]
    assert torch.equal(before["torch"], after["torch"])
    assert torch.equal(before["numpy"]["keys"], after["numpy"]["keys"])


def test_resume_from_a_checkpoint_before_the_first_step(tmp_path: Path, tokenizer) -> None:
    # Saving at step 0 must not leave made-up optimizer state (Adam's step count) behind.
    from mrlm.train.tiny import build_tiny_model

    ids = fixed_batch(VOCAB)
    with session_for(build_tiny_model(tokenizer), tmp_path / "a") as session:
        session.save_checkpoint()
        assert not session.optimizer.state
        straight = [lm_step(session, ids) for _ in range(3)]
    with session_for(build_tiny_model(tokenizer), tmp_path / "a", run={"resume": "latest"}) as session:
        session.restore()
        assert session.step == 0 and not session.optimizer.state
        assert [lm_step(session, ids) for _ in range(3)] == straight


def test_keeps_the_newest_checkpoints(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(VOCAB)
    with session_for(
        fresh_model, tmp_path, run={"max_steps": 5, "save_every": 1, "keep_checkpoints": 2}
    ) as s:
        for _ in range(5):
            lm_step(s, ids)
            assert s.maybe_save() is not None
            assert s.maybe_save() is None  # once per step
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000004", "step-000005"]


def test_maybe_save_follows_save_every_and_max_steps(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(VOCAB)
    saved = []
    with session_for(
        fresh_model, tmp_path, run={"max_steps": 5, "save_every": 2, "keep_checkpoints": 0}
    ) as s:
        assert s.maybe_save() is None  # nothing to save before the first step
        for _ in range(5):
            lm_step(s, ids)
            path = s.maybe_save()
            saved.append(path.name if path else None)
    assert saved == [None, "step-000002", None, "step-000004", "step-000005"]


def test_auto_starts_fresh_without_a_checkpoint(tmp_path: Path, fresh_model) -> None:
    with session_for(fresh_model, tmp_path, run={"resume": "auto"}) as session:
        assert session.restore() is None
        assert session.step == 0


def test_no_resume_returns_none(tmp_path: Path, fresh_model) -> None:
    with session_for(fresh_model, tmp_path) as session:
        assert session.restore() is None


def _saved_run(tmp_path: Path, tokenizer) -> Path:
    from mrlm.train.tiny import build_tiny_model

    with session_for(build_tiny_model(tokenizer), tmp_path) as session:
        lm_step(session, fixed_batch(VOCAB))
        return session.save_checkpoint()


def _restore(tmp_path: Path, tokenizer, resume: str) -> Any:
    from mrlm.train.tiny import build_tiny_model

    with session_for(build_tiny_model(tokenizer), tmp_path, run={"resume": resume}) as session:
        return session.restore()


def test_latest_without_checkpoints_names_the_directory(tmp_path: Path, tokenizer) -> None:
    with pytest.raises(CheckpointError, match=rf"no checkpoint in {tmp_path / 'checkpoints'}"):
        _restore(tmp_path, tokenizer, "latest")


def test_a_run_directory_given_as_the_checkpoint_names_its_newest(tmp_path: Path, tokenizer) -> None:
    saved = _saved_run(tmp_path / "run", tokenizer)
    run = tmp_path / "run"
    message = (
        f"{run} is a run's directory, not a checkpoint: name one of its checkpoints (its newest is {saved})"
    )
    with pytest.raises(CheckpointError, match=f"^{re.escape(message)}"):
        _restore(tmp_path / "other", tokenizer, str(run))


def test_missing_path_is_named(tmp_path: Path, tokenizer) -> None:
    missing = tmp_path / "nowhere" / "step-000001"
    with pytest.raises(CheckpointError, match=f"{missing} does not exist"):
        _restore(tmp_path, tokenizer, str(missing))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: (path / "meta.json").unlink(), "incomplete: no meta.json"),
        (lambda path: (path / "meta.json").write_text("{not json"), "unreadable meta.json"),
        (lambda path: (path / "trainer.pt").unlink(), "incomplete: no trainer.pt"),
        (lambda path: (path / "state" / "__0_0.distcp").write_bytes(b"\0" * 64), "could not be loaded"),
        (lambda path: (path / "rank-00000.pt").write_bytes(b"garbage"), "unreadable rank-00000.pt"),
    ],
)
def test_broken_checkpoint_is_a_clear_error(tmp_path: Path, tokenizer, damage: Any, message: str) -> None:
    path = _saved_run(tmp_path, tokenizer)
    damage(path)
    # Resealed, as if saved broken: the damage passes verification and reaches the loaders' checks.
    manifest.seal(path, 0, 1)
    with pytest.raises(CheckpointError, match=message) as info:
        _restore(tmp_path, tokenizer, str(path))
    assert str(path) in str(info.value)
