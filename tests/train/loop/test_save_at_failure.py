"""A run of one process that stops on an error saves its last finished step, exactly as a checkpoint
at that step would have held it, unless an update of the next step already changed the models."""

from __future__ import annotations

import io
import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from mrlm.train.loop import NonFiniteError, TrainingSession, latest_checkpoint
from mrlm.train.loop.boundary import copied_containers, saves_at_failure
from mrlm.train.loop.errors import Terminated
from tests.train.loop.helpers import lm_step, parameters_of, session_for

VOCAB = 512


class ServerGone(ConnectionError):
    """Stands for a remote env server that went away during a rollout."""


def _sampled_batch() -> torch.Tensor:
    """A batch drawn from all three global generators, as a rollout would draw them."""
    rows = torch.randint(3, VOCAB, (4, 10))
    start = int(np.random.randint(0, 3))
    rows = rows[:, start : start + 8]
    return rows.flip(1) if random.random() < 0.5 else rows


def _session(model: torch.nn.Module, out: Path, **run: Any) -> TrainingSession:
    return session_for(model, out, run={"max_steps": 5, "seed": 3, **run}, optim={"weight_decay": 0.1})


def _train(session: TrainingSession, until: int, cursor: dict[str, Any], fail_at: int | None = None) -> None:
    """Steps up to ``until``; the step ``fail_at`` draws its batch (moving every generator and the
    cursor on) and then fails before its update, as a rollout whose env server went away."""
    while session.step < until:
        batch = _sampled_batch()
        cursor["batches"] += 1
        if session.step + 1 == fail_at:
            raise ServerGone("the env server went away")
        session.log({"loss": lm_step(session, batch)})
        session.maybe_save({"cursor": dict(cursor)})


def _fails_at_step_4(model: torch.nn.Module, out: Path, **run: Any) -> None:
    with _session(model, out, **run) as session:
        _train(session, 5, {"batches": 0}, fail_at=4)


def test_the_last_finished_step_is_saved_and_resumes_exactly(
    tmp_path: Path, tokenizer, caplog: pytest.LogCaptureFixture
) -> None:
    from mrlm.train.tiny import build_tiny_model

    straight = build_tiny_model(tokenizer)
    with _session(straight, tmp_path / "straight") as session:
        _train(session, 5, {"batches": 0})

    out = tmp_path / "failed"
    with caplog.at_level(logging.WARNING), pytest.raises(ServerGone):
        _fails_at_step_4(build_tiny_model(tokenizer), out)
    assert latest_checkpoint(out) == out / "checkpoints" / "step-000003"  # save_every=0 saved nothing else
    assert "stopped during step 4 (ServerGone); step 3 is saved as" in caplog.text

    resumed = build_tiny_model(tokenizer, seed=99)
    with _session(resumed, out, resume="latest") as session:
        state = session.restore()
        assert state == {"cursor": {"batches": 3}}  # as step 3 left it, not the failed step's 4
        assert session.step == 3
        _train(session, 5, state["cursor"])
    expected, got = parameters_of(straight), parameters_of(resumed)
    assert all(torch.equal(got[name], expected[name]) for name in expected)  # same generators too


def _fails_between_two_updates(model: torch.nn.Module, out: Path) -> None:
    with _session(model, out) as session:
        lm_step(session, _sampled_batch())
        session.maybe_save({"cursor": 1})
        with session.training_step():
            lm_step(session, _sampled_batch())  # the models no longer hold step 1
            raise ServerGone("gone between two updates of one step")


def test_nothing_is_saved_once_the_next_step_has_updated(tmp_path: Path, fresh_model) -> None:
    with pytest.raises(ServerGone):
        _fails_between_two_updates(fresh_model, tmp_path)
    assert latest_checkpoint(tmp_path) is None


def _fails_before_any_step(model: torch.nn.Module, out: Path) -> None:
    with _session(model, out):
        raise ServerGone("before any step")


def _meets_a_nan_loss(model: torch.nn.Module, out: Path) -> None:
    with _session(model, out) as session:
        lm_step(session, _sampled_batch())
        session.maybe_save({"cursor": 1})
        session.check_finite(float("nan"), "loss")  # its message names the last checkpoint: kept true


def test_nothing_is_saved_before_the_first_step_or_on_a_non_finite_loss(tmp_path: Path, fresh_model) -> None:
    with pytest.raises(ServerGone):
        _fails_before_any_step(fresh_model, tmp_path / "early")
    assert latest_checkpoint(tmp_path / "early") is None
    with pytest.raises(NonFiniteError):
        _meets_a_nan_loss(fresh_model, tmp_path / "nan")
    assert latest_checkpoint(tmp_path / "nan") is None


def _fails_after_a_saved_step(model: torch.nn.Module, out: Path, saved: list[tuple[Path, int]]) -> None:
    with _session(model, out, save_every=1) as session:
        lm_step(session, _sampled_batch())
        path = session.maybe_save({"cursor": 1})
        assert path is not None
        saved.append((path, (path / "meta.json").stat().st_mtime_ns))
        raise ServerGone("after a saved step")


def test_a_step_already_saved_is_not_saved_again(tmp_path: Path, fresh_model) -> None:
    saved: list[tuple[Path, int]] = []
    with pytest.raises(ServerGone):
        _fails_after_a_saved_step(fresh_model, tmp_path, saved)
    path, written = saved[0]
    assert latest_checkpoint(tmp_path) == path
    assert (path / "meta.json").stat().st_mtime_ns == written  # not written again
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000001"]


def _fails_after_saving_itself(model: torch.nn.Module, out: Path, saved: list[tuple[Path, int]]) -> None:
    with _session(model, out) as session:  # save_every=0: the step's end keeps its boundary
        lm_step(session, _sampled_batch())
        assert session.maybe_save({"cursor": 1}) is None
        path = session.save_checkpoint({"cursor": 1})  # as an algorithm saving at a moment of its own
        saved.append((path, (path / "meta.json").stat().st_mtime_ns))
        raise ServerGone("after the step was saved by its algorithm")


def test_a_step_its_algorithm_saved_is_not_saved_again(tmp_path: Path, fresh_model) -> None:
    saved: list[tuple[Path, int]] = []
    with pytest.raises(ServerGone):
        _fails_after_saving_itself(fresh_model, tmp_path, saved)
    path, written = saved[0]
    assert path == tmp_path / "checkpoints" / "step-000001"
    assert (path / "meta.json").stat().st_mtime_ns == written  # not written again


def test_which_errors_save() -> None:
    assert saves_at_failure(ServerGone("gone"))
    assert saves_at_failure(KeyboardInterrupt())
    assert saves_at_failure(Terminated())
    assert not saves_at_failure(NonFiniteError("nan", step=2, where="loss"))
    assert not saves_at_failure(SystemExit(1))


def test_copied_containers_do_not_follow_later_changes() -> None:
    tensor = torch.zeros(2)
    state: dict[str, Any] = {"cursor": [1, {"seen": [2]}], "pair": (3, [4]), "tensor": tensor}
    copied = copied_containers(state)
    state["cursor"][1]["seen"].append(5)
    state["pair"][1].append(6)
    state["cursor"].append(7)
    assert copied == {"cursor": [1, {"seen": [2]}], "pair": (3, [4]), "tensor": tensor}
    assert copied["tensor"] is tensor  # values are shared, only containers are copied


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_saved_step_is_said_on_a_line_of_its_own_after_the_progress_line(
    tmp_path: Path, fresh_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)  # where the progress line is drawn
    said = logging.StreamHandler(terminal)
    logger = logging.getLogger("mrlm.train.loop.session")
    logger.addHandler(said)
    try:
        with pytest.raises(ServerGone):
            _fails_at_step_4(fresh_model, tmp_path, progress_bar=True)
    finally:
        logger.removeHandler(said)
    _, _, rest = terminal.getvalue().rpartition("\r")  # from the last drawing of the progress line
    assert "step 3/5" in rest
    assert "\nthe run stopped during step 4 (ServerGone); step 3 is saved as" in rest


def test_a_save_that_fails_is_said_and_the_first_error_still_ends_the_run(
    tmp_path: Path, fresh_model, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mrlm.train.loop import checkpoint

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(checkpoint, "write_state", disk_full)
    with caplog.at_level(logging.WARNING), pytest.raises(ServerGone):
        _fails_at_step_4(fresh_model, tmp_path)
    assert (
        "the run stopped during step 4 and its step 3 could not be saved: [Errno 28] No space" in caplog.text
    )
    assert latest_checkpoint(tmp_path) is None
