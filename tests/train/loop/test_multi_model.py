"""A session that trains several named models beside frozen ones, and counts training steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, PreTrainedTokenizerFast

from mrlm.train.loop import CheckpointError, DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.tiny import build_tiny_model
from mrlm.train.value import token_values, value_model_from
from tests.train.loop.helpers import fixed_batch, parameters_of
from tests.train.loop.multi_driver import Options, train

ROOT = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("multi_driver.py")


def _session(models: Any, tmp: Path, *, frozen: Any = None, optim: Any = None, **run: Any) -> TrainingSession:
    return TrainingSession(
        models,
        frozen=frozen,
        run=RunConfig(output_dir=str(tmp), progress_bar=False, **run),
        optim=optim if optim is not None else OptimConfig(learning_rate=1e-3),
        dist=DistributedConfig(),
    )


def _two_models(tokenizer: PreTrainedTokenizerFast) -> dict[str, torch.nn.Module]:
    policy = build_tiny_model(tokenizer)
    return {"policy": policy, "critic": value_model_from(policy, seed=1)}


def _joint_step(session: TrainingSession, ids: torch.Tensor) -> dict[str, float]:
    loss = session.models["policy"](input_ids=ids, labels=ids).loss
    values = token_values(session.models["critic"], ids, torch.ones_like(ids))
    session.backward(loss + values.pow(2).mean())
    return session.optimizer_step()


def test_one_backward_updates_every_model_with_its_own_optimizer(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    optims = {
        "policy": OptimConfig(learning_rate=1e-3),
        "critic": OptimConfig(learning_rate=0.0, warmup_steps=0),
    }
    with _session(_two_models(tokenizer), tmp_path, optim=optims) as session:
        assert session.model_names == ["policy", "critic"]
        before = {name: parameters_of(session.unwrapped(name)) for name in session.model_names}
        stats = _joint_step(session, fixed_batch(len(tokenizer)))
        assert stats["lr"] == 1e-3 and stats["lr/critic"] == 0.0
        assert stats["grad_norm"] > 0 and stats["grad_norm/critic"] > 0
        after = {name: parameters_of(session.unwrapped(name)) for name in session.model_names}
    moved = {
        name: any(not torch.equal(before[name][k], after[name][k]) for k in before[name]) for name in before
    }
    assert moved == {"policy": True, "critic": False}  # the critic's learning rate is 0


def test_frozen_models_stay_frozen_and_out_of_the_optimizers(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    reference = build_tiny_model(tokenizer)
    with _session(build_tiny_model(tokenizer), tmp_path, frozen={"reference": reference}) as session:
        frozen = session.frozen["reference"]
        assert not frozen.training and not any(p.requires_grad for p in frozen.parameters())
        optimized = {id(p) for group in session.optimizer.param_groups for p in group["params"]}
        assert not optimized & {id(p) for p in frozen.parameters()}
        weights = parameters_of(frozen)
        ids = fixed_batch(len(tokenizer))
        loss = session.model(input_ids=ids, labels=ids).loss + frozen(input_ids=ids).logits.mean()
        session.backward(loss)
        session.optimizer_step()
        assert all(torch.equal(weights[k], v) for k, v in parameters_of(frozen).items())


def test_optimizer_steps_inside_a_training_step_count_once(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    optim = OptimConfig(learning_rate=1e-3, warmup_steps=0, lr_schedule="linear")
    with _session(build_tiny_model(tokenizer), tmp_path, optim=optim, max_steps=4) as session:
        ids = fixed_batch(len(tokenizer))
        lrs = []
        for _ in range(2):
            with session.training_step():
                for _ in range(3):
                    session.backward(session.model(input_ids=ids, labels=ids).loss)
                    lrs.append(session.optimizer_step()["lr"])
        assert session.step == 2
        # One schedule value per training step: 1e-3 * (1 - s / 4) for s = 0, 1.
        assert lrs == pytest.approx([1e-3] * 3 + [7.5e-4] * 3, rel=1e-9)

        def failing_step() -> None:
            with session.training_step():
                session.backward(session.model(input_ids=ids, labels=ids).loss)
                session.optimizer_step()
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError, match="boom"):
            failing_step()
        assert session.step == 2  # a step that failed does not count


def test_final_models_load_back_with_plain_transformers(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    with _session(_two_models(tokenizer), tmp_path / "run") as session:
        _joint_step(session, fixed_batch(len(tokenizer)))
        final = session.save_final(tokenizer)
        ids = fixed_batch(len(tokenizer), rows=2)
        with torch.no_grad():
            logits = session.models["policy"](input_ids=ids).logits
            values = token_values(session.models["critic"], ids, torch.ones_like(ids))
    policy = AutoModelForCausalLM.from_pretrained(final / "policy")
    critic = AutoModelForTokenClassification.from_pretrained(final / "critic")
    with torch.no_grad():
        torch.testing.assert_close(policy(input_ids=ids).logits, logits, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            token_values(critic, ids, torch.ones_like(ids)), values, rtol=1e-5, atol=1e-5
        )
    assert (final / "critic" / "tokenizer_config.json").is_file()


def test_bad_model_sets_are_refused(tokenizer: PreTrainedTokenizerFast, tmp_path: Path) -> None:
    model = build_tiny_model(tokenizer)
    with pytest.raises(ValueError, match="at least one trainable model"):
        _session({}, tmp_path)
    with pytest.raises(ValueError, match="two models are called 'policy'"):
        _session(model, tmp_path, frozen={"policy": build_tiny_model(tokenizer)})
    with pytest.raises(ValueError, match="given under another name"):
        _session({"a": model, "b": model}, tmp_path)
    with pytest.raises(ValueError, match=r"optim gives no settings for the models \['critic'\]"):
        _session(_two_models(tokenizer), tmp_path, optim={"policy": OptimConfig()})
    with pytest.raises(ValueError, match="names models that do not exist"):
        _session(model, tmp_path, optim={"policy": OptimConfig(), "critc": OptimConfig()})


def test_a_checkpoint_of_other_models_is_refused(tokenizer: PreTrainedTokenizerFast, tmp_path: Path) -> None:
    with _session(build_tiny_model(tokenizer), tmp_path, max_steps=1) as session:
        ids = fixed_batch(len(tokenizer))
        session.backward(session.model(input_ids=ids, labels=ids).loss)
        session.optimizer_step()
        session.save_checkpoint()
    with (
        pytest.raises(
            CheckpointError, match=r"holds the models \['policy'\], this run trains \['critic', 'policy'\]"
        ),
        _session(_two_models(tokenizer), tmp_path, max_steps=2, resume="latest") as session,
    ):
        session.restore()


def test_a_checkpoint_of_another_model_is_named_before_loading(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    with _session(build_tiny_model(tokenizer), tmp_path, max_steps=1) as session:
        ids = fixed_batch(len(tokenizer))
        session.backward(session.model(input_ids=ids, labels=ids).loss)
        session.optimizer_step()
        session.save_checkpoint()
    wider = build_tiny_model(tokenizer, hidden_size=96)
    with (
        pytest.raises(
            CheckpointError,
            match=r"does not fit this run's model 'policy': model\.embed_tokens\.weight is \(\d+, 64\) "
            r"in the checkpoint, \(\d+, 96\) here; it was saved by a run of another model",
        ),
        _session(wider, tmp_path, max_steps=2, resume="latest") as session,
    ):
        session.restore()
    deeper = build_tiny_model(tokenizer, num_layers=3)
    with (
        pytest.raises(
            CheckpointError,
            match=r"model 'policy': \d+ of its weights are not in the checkpoint \('model\.layers\.2\.",
        ),
        _session(deeper, tmp_path, max_steps=2, resume="latest") as session,
    ):
        session.restore()
    with _session(build_tiny_model(tokenizer, seed=5), tmp_path, max_steps=2, resume="latest") as session:
        session.restore()  # the same model: loads
        assert session.step == 1


@dataclass
class GuessConfig:
    """Stands for an algorithm's config: the session keeps its class's name in checkpoints."""

    rounds: int = 1


@dataclass
class PickConfig:
    rounds: int = 1


def _configured(model: torch.nn.Module, tmp: Path, config: object, **run: Any) -> TrainingSession:
    return TrainingSession(
        model,
        run=RunConfig(output_dir=str(tmp), progress_bar=False, **run),
        optim=OptimConfig(learning_rate=1e-3),
        dist=DistributedConfig(),
        config=config,
    )


def test_a_checkpoint_of_another_algorithm_is_refused(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    with _configured(build_tiny_model(tokenizer), tmp_path, GuessConfig(), max_steps=1) as session:
        ids = fixed_batch(len(tokenizer))
        session.backward(session.model(input_ids=ids, labels=ids).loss)
        session.optimizer_step()
        session.save_checkpoint({"round": 1})
    with (
        pytest.raises(
            CheckpointError,
            match=r"was saved by a Guess run, this run is Pick: a run resumes only checkpoints",
        ),
        _configured(
            build_tiny_model(tokenizer), tmp_path, PickConfig(), max_steps=2, resume="latest"
        ) as session,
    ):
        session.restore()
    with _configured(
        build_tiny_model(tokenizer), tmp_path, GuessConfig(rounds=3), max_steps=2, resume="latest"
    ) as session:
        assert session.restore() == {"round": 1}  # its own kind, other settings: resumes


def _steps(report: dict[str, Any]) -> list[tuple[int, list[float], list[float]]]:
    return [
        (
            record["step"],
            [i["policy"] for i in record["iterations"]],
            [i["value"] for i in record["iterations"]],
        )
        for record in report["records"]
    ]


def _assert_close_runs(got: list[Any], expected: list[Any]) -> None:
    assert [step for step, _, _ in got] == [step for step, _, _ in expected]
    for (_, policy, value), (_, want_policy, want_value) in zip(got, expected, strict=True):
        assert policy == pytest.approx(want_policy, rel=1e-4, abs=1e-5)
        assert value == pytest.approx(want_value, rel=1e-4, abs=1e-5)


def test_policy_critic_and_reference_resume_exactly_in_one_process(tmp_path: Path) -> None:
    whole = train(Options(str(tmp_path / "whole"), str(tmp_path / "whole-reports"), steps=4))
    train(Options(str(tmp_path / "split"), str(tmp_path / "first"), steps=2, save_every=2))
    resumed = train(Options(str(tmp_path / "split"), str(tmp_path / "second"), steps=4, resume="latest"))
    assert [step for step, _, _ in _steps(whole)] == [1, 2, 3, 4]
    _assert_close_runs(_steps(resumed), _steps(whole)[2:])
    for name, tensors in whole["digests"].items():
        for key, value in tensors.items():
            assert resumed["digests"][name][key] == pytest.approx(value, rel=1e-5), (name, key)


def _torchrun(output: Path, reports: Path, *args: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command += [
        str(DRIVER),
        "--output-dir",
        str(output),
        "--report-dir",
        str(reports),
        "--strategy",
        "fsdp",
        *args,
    ]
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCELERATE_")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    report: dict[str, Any] = json.loads((reports / "rank-0.json").read_text())
    return report


@pytest.mark.slow
def test_policy_critic_and_reference_under_fsdp_resume_in_a_new_process(tmp_path: Path) -> None:
    """Two training steps under 2-process FSDP, saved; two more in new processes from the
    checkpoint: the same losses and weights as four steps in one process."""
    whole = train(Options(str(tmp_path / "single"), str(tmp_path / "single-reports"), steps=4))
    first = _torchrun(tmp_path / "fsdp", tmp_path / "first", "--steps", "2", "--save-every", "2")
    assert first["frozen_type"].startswith("FSDP")  # the reference is sharded too
    resumed = _torchrun(tmp_path / "fsdp", tmp_path / "second", "--steps", "4", "--resume", "latest")
    _assert_close_runs(_steps(first) + _steps(resumed), _steps(whole))
    for name, tensors in whole["digests"].items():
        for key, value in tensors.items():
            assert resumed["digests"][name][key] == pytest.approx(value, rel=1e-4), (name, key)
    assert sorted(p.name for p in (tmp_path / "fsdp" / "final").iterdir()) == ["critic", "policy"]
