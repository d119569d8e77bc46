"""One process: training steps, clipping, non-finite values, accumulation, precision, set-up errors."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math
from pathlib import Path

import pytest
import torch

from mrlm.train.loop import (
    CheckpointError,
    DistributedConfig,
    DistributedSetupError,
    NonFiniteError,
    OptimConfig,
    RunConfig,
    TrainingSession,
)
from mrlm.train.loop.distributed import resolve_strategy
from mrlm.train.loop.progress import Progress, format_duration
from tests.train.loop.helpers import fixed_batch, lm_step, parameters_of, session_for, tree_digest


def test_losses_decrease_on_a_fixed_batch(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(len(tokenizer))
    with session_for(fresh_model, tmp_path, run={"max_steps": 8}, optim={"learning_rate": 3e-3}) as session:
        assert (session.strategy, session.world_size, session.rank) == ("single", 1, 0)
        assert session.is_main_process and session.unwrapped_model is fresh_model
        assert fresh_model.training  # the session trains
        losses = [lm_step(session, ids) for _ in range(8)]
        assert session.step == 8
    assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
    assert losses[-1] < losses[0] - 0.5


class Pair(torch.nn.Module):
    """One parameter of two elements: loss (w * c).sum() has gradient c."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))


def _one_step(tmp_path: Path, max_grad_norm: float) -> tuple[dict[str, float], torch.Tensor]:
    model = Pair()
    with session_for(model, tmp_path, optim={"max_grad_norm": max_grad_norm}) as session:
        session.backward((model.w * torch.tensor([3.0, 4.0])).sum())
        stats = session.optimizer_step()
        exp_avg = session.optimizer.state[model.w]["exp_avg"].clone()
    return stats, exp_avg


def test_clipping_caps_the_norm_by_hand(tmp_path: Path) -> None:
    # Gradient (3, 4) has norm 5; clipped to norm 1 it is (0.6, 0.8) (times 5 / (5 + 1e-6)).
    # AdamW's first moment after one step is (1 - beta1) * gradient = 0.1 * clipped gradient.
    stats, exp_avg = _one_step(tmp_path / "clip", max_grad_norm=1.0)
    assert stats["grad_norm"] == pytest.approx(5.0, abs=1e-6)  # reported before clipping
    scale = 1.0 / (5.0 + 1e-6)
    assert exp_avg.tolist() == pytest.approx([0.1 * 3 * scale, 0.1 * 4 * scale], rel=1e-6)
    assert float(exp_avg.norm()) == pytest.approx(0.1, rel=1e-5)

    stats, exp_avg = _one_step(tmp_path / "noclip", max_grad_norm=0.0)
    assert stats["grad_norm"] == pytest.approx(5.0, abs=1e-6)
    assert exp_avg.tolist() == pytest.approx([0.3, 0.4], rel=1e-6)


def test_a_norm_below_the_limit_is_not_scaled(tmp_path: Path) -> None:
    _, exp_avg = _one_step(tmp_path, max_grad_norm=10.0)
    assert exp_avg.tolist() == pytest.approx([0.3, 0.4], rel=1e-6)


def test_nan_loss_raises_naming_the_step(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(len(tokenizer))
    with session_for(fresh_model, tmp_path) as session:
        lm_step(session, ids)
        loss = session.model(input_ids=ids, labels=ids).loss
        with pytest.raises(NonFiniteError, match=r"at step 2 in loss") as info:
            session.backward(loss * float("nan"))
        assert (info.value.step, info.value.where, info.value.parameter) == (2, "loss", None)
        assert all(param.grad is None for param in fresh_model.parameters())


def test_nan_gradient_raises_naming_parameter_and_keeps_the_checkpoint(
    tmp_path: Path, fresh_model, tokenizer
) -> None:
    ids = fixed_batch(len(tokenizer))
    with session_for(fresh_model, tmp_path) as session:
        lm_step(session, ids)
        lm_step(session, ids)
        saved = session.save_checkpoint({"cursor": 2})
        digest = tree_digest(saved)
        before = parameters_of(fresh_model)
        optimizer_before = {k: v["exp_avg"].clone() for k, v in session.optimizer.state.items()}

        loss = session.model(input_ids=ids, labels=ids).loss
        session.backward(loss)
        target = "model.layers.1.mlp.down_proj.weight"
        dict(fresh_model.named_parameters())[target].grad[0, 0] = float("inf")
        with pytest.raises(NonFiniteError) as info:
            session.optimizer_step()
        error = info.value
        assert (error.step, error.where, error.parameter) == (3, "gradient", target)
        assert "at step 3" in str(error) and target in str(error) and "step-000002" in str(error)

        # Nothing moved: parameters, optimizer state, schedule, step; the checkpoint is intact.
        assert session.step == 2
        after = parameters_of(fresh_model)
        assert all(torch.equal(before[name], after[name]) for name in before)
        assert all(torch.equal(optimizer_before[p], s["exp_avg"]) for p, s in session.optimizer.state.items())
        assert tree_digest(saved) == digest
        assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000002"]

        # The gradients were cleared, so training can go on.
        lm_step(session, ids)
        assert session.step == 3


def test_nan_in_the_first_parameter_is_found_first(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(len(tokenizer))
    with session_for(fresh_model, tmp_path) as session:
        # A NaN in the embeddings' output poisons every gradient; the first parameter is named.
        handle = fresh_model.model.embed_tokens.register_forward_hook(lambda m, i, o: o * float("nan"))
        loss = session.model(input_ids=ids, labels=ids).loss
        handle.remove()
        with pytest.raises(NonFiniteError, match="in loss"):
            session.backward(loss)
        session.backward(session.model(input_ids=ids, labels=ids).loss * 1.0)
        fresh_model.model.norm.weight.grad[0] = float("nan")
        fresh_model.model.embed_tokens.weight.grad[5, 0] = float("nan")
        with pytest.raises(NonFiniteError) as info:
            session.optimizer_step()
        assert info.value.parameter == "model.embed_tokens.weight"


def test_check_finite(tmp_path: Path) -> None:
    with session_for(Pair(), tmp_path) as session:
        session.check_finite(torch.tensor([1.0, 2.0]), "reward")
        session.check_finite(3.0, "reward")
        with pytest.raises(NonFiniteError, match=r"non-finite value \(inf\) at step 1 in reward"):
            session.check_finite(math.inf, "reward")
        with pytest.raises(NonFiniteError, match="shape"):
            session.check_finite(torch.tensor([1.0, math.nan]), "advantages")


def test_accumulated_micro_batches_equal_one_batch(tmp_path: Path, tokenizer) -> None:
    # The contract: micro-batch means divided by their count add up to the full-batch mean.
    from mrlm.train.tiny import build_tiny_model

    ids = fixed_batch(len(tokenizer), rows=8)
    gradients, parameters = [], []
    for micro_batches in (1, 2, 4):
        model = build_tiny_model(tokenizer)
        with session_for(model, tmp_path / str(micro_batches)) as session:
            for step in range(2):
                chunks = ids.chunk(micro_batches)
                for index, chunk in enumerate(chunks):
                    last = index == len(chunks) - 1
                    with contextlib.nullcontext() if last else session.no_sync():
                        session.backward(session.model(input_ids=chunk, labels=chunk).loss / len(chunks))
                if step == 0:
                    gradients.append({name: p.grad.clone() for name, p in model.named_parameters()})  # type: ignore[union-attr]
                session.optimizer_step()
        parameters.append(parameters_of(model))
    for index in (1, 2):
        for name, value in gradients[0].items():
            torch.testing.assert_close(gradients[index][name], value, rtol=0, atol=1e-6)
        for name, value in parameters[0].items():
            # Adam divides by the gradient's running RMS, which magnifies float rounding of tiny gradients.
            torch.testing.assert_close(parameters[index][name], value, rtol=0, atol=1e-5)


def test_step_needs_a_backward_and_a_synced_last_micro_batch(tmp_path: Path, fresh_model) -> None:
    with session_for(fresh_model, tmp_path) as session:
        with pytest.raises(RuntimeError, match="without any backward"):
            session.optimizer_step()
        with session.no_sync(), pytest.raises(RuntimeError, match="already active"), session.no_sync():
            pass
        with pytest.raises(ValueError, match="scalar"):
            session.backward(torch.ones(2, requires_grad=True))


def test_bf16_autocast_on_cpu(tmp_path: Path, fresh_model, tokenizer) -> None:
    ids = fixed_batch(len(tokenizer))
    with torch.no_grad():
        reference = fresh_model(input_ids=ids, labels=ids).loss
    with session_for(fresh_model, tmp_path, dist={"mixed_precision": "bf16"}) as session:
        output = session.model(input_ids=ids, labels=ids)
        assert output.logits.dtype == torch.float32  # outputs come back in float32
        assert fresh_model.model.embed_tokens.weight.dtype == torch.float32  # weights stay float32
        loss = float(output.loss.detach())
        assert loss != float(reference)  # computed in bf16...
        assert loss == pytest.approx(float(reference), rel=2e-2)  # ...close to float32
        session.backward(output.loss)
        session.optimizer_step()


def test_fp16_on_cpu_is_a_clear_error(tmp_path: Path, fresh_model) -> None:
    with pytest.raises(DistributedSetupError, match=r"fp16.*needs a GPU"):
        session_for(fresh_model, tmp_path, dist={"mixed_precision": "fp16", "cpu": True})


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_ddp_or_fsdp_with_one_process_is_refused(tmp_path: Path, fresh_model, strategy: str) -> None:
    with pytest.raises(DistributedSetupError, match="needs several processes"):
        session_for(fresh_model, tmp_path, dist={"strategy": strategy})
    # The failed session released accelerate's state: a new one with other settings works.
    with session_for(fresh_model, tmp_path, dist={"mixed_precision": "bf16"}) as session:
        assert session.strategy == "single"


def test_accelerate_fsdp_switch_is_refused(tmp_path: Path, fresh_model, monkeypatch) -> None:
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    with pytest.raises(DistributedSetupError, match=r"ACCELERATE_USE_FSDP.*--use_fsdp"):
        session_for(fresh_model, tmp_path, dist={"strategy": "fsdp"})


def test_launcher_precision_must_agree(tmp_path: Path, fresh_model, monkeypatch) -> None:
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    with pytest.raises(DistributedSetupError, match="disagrees"):
        session_for(fresh_model, tmp_path)


@pytest.mark.parametrize(
    ("strategy", "world_size", "expected"),
    [
        ("auto", 1, "single"),
        ("auto", 4, "ddp"),
        ("single", 1, "single"),
        ("ddp", 2, "ddp"),
        ("fsdp", 8, "fsdp"),
    ],
)
def test_resolve_strategy(strategy: str, world_size: int, expected: str) -> None:
    assert resolve_strategy(strategy, world_size) == expected


def test_single_with_several_processes_is_refused() -> None:
    with pytest.raises(DistributedSetupError, match="unrelated copies"):
        resolve_strategy("single", 2)


def test_trainable_parameters_freeze_the_rest(tmp_path: Path, fresh_model, tokenizer) -> None:
    head = fresh_model.model.norm.weight
    before = parameters_of(fresh_model)
    with session_for(fresh_model, tmp_path, trainable_parameters=[head]) as session:
        assert [name for name, _ in session.named_trainable_parameters] == ["model.norm.weight"]
        lm_step(session, fixed_batch(len(tokenizer)))
    after = parameters_of(fresh_model)
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    assert changed == {"model.norm.weight"}
    with pytest.raises(ValueError, match="not parameters of the model"):
        session_for(fresh_model, tmp_path, trainable_parameters=[torch.nn.Parameter(torch.ones(1))])


def test_missing_tracker_package_is_a_clear_error(tmp_path: Path, fresh_model) -> None:
    import importlib.util

    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed here")
    with pytest.raises(ImportError, match="pip install tensorboard"):
        session_for(fresh_model, tmp_path, run={"report_to": ("tensorboard",)})


def test_log_writes_jsonl_and_the_progress_line(tmp_path: Path, fresh_model, tokenizer, capsys) -> None:
    ids = fixed_batch(len(tokenizer))
    run = {"max_steps": 3, "log_every": 2, "progress_bar": True}
    with session_for(fresh_model, tmp_path, run=run) as session:
        for _ in range(3):
            loss = lm_step(session, ids)
            session.log({"loss": torch.tensor(loss), "reward": 0.5, "tokens": 48})
        session.log({"eval_reward": 1.0}, step=3)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 3]
    assert set(records[0]) == {"step", "time", "loss", "reward", "tokens"}
    assert records[3]["eval_reward"] == 1.0
    # Not a terminal here: one line per display, every log_every steps and at max_steps.
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("step ")]
    assert [line.split(" | ")[0] for line in lines] == ["step 2/3", "step 3/3", "step 3/3"]
    assert "reward 0.5" in lines[0] and "loss " in lines[0] and "tok/s" in lines[0] and "left" in lines[0]


def test_progress_redraws_in_place_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    progress = Progress(10, stream=stream)
    progress.show(1, {"loss": 2.0})
    progress.show(2, {"loss": 1.0})
    progress.close()
    assert stream.getvalue().startswith("\rstep 1/10 | loss 2") and stream.getvalue().endswith("\n")
    assert stream.getvalue().count("\n") == 1


def test_a_fresh_run_refuses_a_directory_with_checkpoints(tmp_path: Path, fresh_model, tokenizer) -> None:
    with session_for(fresh_model, tmp_path) as session:
        lm_step(session, fixed_batch(len(tokenizer)))
        session.save_checkpoint()
    with pytest.raises(CheckpointError, match="already holds checkpoints"):
        session_for(fresh_model, tmp_path)


def test_format_duration() -> None:
    assert [format_duration(s) for s in (7, 245, 11040)] == ["7s", "4m05s", "3h04m"]


def test_sessions_one_after_another_in_one_process(tmp_path: Path, tokenizer) -> None:
    from mrlm.train.tiny import build_tiny_model

    for precision in ("no", "bf16", "no"):
        session = TrainingSession(
            build_tiny_model(tokenizer),
            run=RunConfig(output_dir=str(tmp_path / precision), progress_bar=False),
            optim=OptimConfig(),
            dist=DistributedConfig(mixed_precision=precision),
        )
        session.close()
        session.close()  # idempotent
