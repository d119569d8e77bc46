"""GRPO: the loss is exact under micro-batching, one step moves log-probs the way the advantages say,
a run writes metrics, checkpoints and a loadable model, resumes exactly, and reads YAML configs."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest
import torch

from mrlm.train.algorithms.grpo import GRPOConfig, grpo_loss, train
from mrlm.train.cli import main
from mrlm.train.config_io import ConfigError, load_config
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.ops.advantages import group_relative_advantages
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import RolloutEngine
from mrlm.train.rollout.batch import RolloutBatch, collate
from tests.train.one_turn_env import OneTurnEnv


def _config(tmp_path: Path, **overrides: object) -> GRPOConfig:
    base = {
        "env_kwargs": '{"level": 1}',
        "group_size": 4,
        "prompts_per_step": 2,
        "max_new_tokens": 8,
        "micro_batch_size": 4,
        "run": RunConfig(output_dir=str(tmp_path / "run"), max_steps=2, progress_bar=False),
        "optim": OptimConfig(learning_rate=1e-3),
    }
    base.update(overrides)
    return GRPOConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def rollout() -> tuple[object, object, RolloutBatch]:
    torch.manual_seed(0)
    model, tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    with torch.no_grad():  # a livelier model than the default init, so replies differ
        for parameter in model.parameters():
            parameter.normal_(0, 0.3)
    engine = RolloutEngine(
        "mrlm/Math-v0",
        HFGenerator(model, tokenizer),
        tokenizer,
        SamplingParams(max_new_tokens=8, seed=0),
        env_kwargs={"level": 1},
    )
    with engine:
        trajectories = engine.collect([1, 2], group_size=4)
    return model, tokenizer, collate(trajectories, tokenizer.pad_token_id)


def test_micro_batches_sum_to_the_batch_loss(rollout: tuple[object, object, RolloutBatch]) -> None:
    model, _, batch = rollout
    config = GRPOConfig(group_size=4, prompts_per_step=2, micro_batch_size=4, aggregation="token_mean")
    adv = torch.linspace(0.1, 1.5, 8)
    tokens = float(batch.mask.sum())
    full, _ = grpo_loss(model, batch, adv, config, ref_logprobs=None, num_sequences=8, num_tokens=tokens)
    parts = 0.0
    for rows in (slice(0, 4), slice(4, 8)):
        micro = RolloutBatch(*(getattr(batch, f.name)[rows] for f in dataclasses.fields(batch)))
        loss, _ = grpo_loss(
            model, micro, adv[rows], config, ref_logprobs=None, num_sequences=8, num_tokens=tokens
        )
        parts += float(loss.detach())
    assert parts == pytest.approx(float(full.detach()), rel=1e-5)
    # On-policy (ratio 1, no clipping) the token-mean loss is -sum(A * mask) / tokens.
    expected = -float((adv.unsqueeze(1) * batch.mask).sum()) / tokens
    assert float(full.detach()) == pytest.approx(expected, rel=1e-4)


def test_one_step_moves_logprobs_with_the_advantages(rollout: tuple[object, object, RolloutBatch]) -> None:
    model, _, batch = rollout
    config = GRPOConfig(group_size=4, prompts_per_step=2, micro_batch_size=8)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, 1.0])
    before = token_logprobs(model, batch.input_ids, batch.attention_mask, batch.mask).detach()
    state = {k: v.clone() for k, v in model.state_dict().items()}  # type: ignore[attr-defined]
    loss, _ = grpo_loss(model, batch, adv, config, ref_logprobs=None, num_sequences=8, num_tokens=1.0)
    loss.backward()
    with torch.no_grad():
        for parameter in model.parameters():  # type: ignore[attr-defined]
            parameter -= 0.05 * parameter.grad
            parameter.grad = None
    after = token_logprobs(model, batch.input_ids, batch.attention_mask, batch.mask).detach()
    model.load_state_dict(state)  # type: ignore[attr-defined]
    change = ((after - before) * batch.mask).sum(dim=1) / batch.mask.sum(dim=1)
    assert float(change[adv > 0].mean()) > 0 > float(change[adv < 0].mean())


def test_advantages_of_a_collected_batch_are_group_relative(
    rollout: tuple[object, object, RolloutBatch],
) -> None:
    _, _, batch = rollout
    adv = group_relative_advantages(batch.rewards, 4)
    assert torch.allclose(adv.view(2, 4).sum(dim=1), torch.zeros(2), atol=1e-5)
    assert batch.groups.view(2, 4).unique(dim=1).shape[1] == 1  # each group is contiguous


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"group_size": 1}, "group_size must be at least 2"),
        ({"micro_batch_size": 0}, "^micro_batch_size must be at least 1, got 0$"),
        ({"env_kwargs": "{level: 1}"}, "env_kwargs is not valid JSON"),
        ({"env_kwargs": "[1]"}, "must be a JSON object"),
    ],
)
def test_contradictory_configs_are_refused(
    tmp_path: Path, overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **overrides)


def test_unknown_env_id_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="unknown env id 'mrlm/Nope-v0'"):
        train(_config(tmp_path, env_id="mrlm/Nope-v0"))


def test_the_cli_reports_an_unknown_env_id_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["grpo", "--env-id", "mrlm/Maht-v0", "--run.output-dir", str(tmp_path), "--run.no-progress-bar"]
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert error.startswith("mrlm-train grpo: UnknownEnvError: unknown env id 'mrlm/Maht-v0'")
    assert "Did you mean 'mrlm/Math-v0'" in error and "Traceback" not in error


class _NaNRewardEnv(OneTurnEnv):
    """Answers every reply with a NaN reward, as a broken custom env might."""

    def reward(self, action: str) -> float:
        return math.nan


@pytest.mark.filterwarnings("ignore:.*reward is a NaN value")
def test_a_nan_reward_stops_the_run_naming_its_source_and_the_last_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gymnasium.register("mrlm-test/NaNReward-v0", entry_point=f"{__name__}:_NaNRewardEnv")
    try:
        argv = ["grpo", "--env-id", "mrlm-test/NaNReward-v0", "--env-kwargs", "{}", "--group-size", "2"]
        argv += ["--prompts-per-step", "1", "--max-new-tokens", "2", "--micro-batch-size", "2"]
        argv += ["--run.output-dir", str(tmp_path), "--run.no-progress-bar"]
        assert main(argv) == 1
    finally:
        gymnasium.registry.pop("mrlm-test/NaNReward-v0")
    error = capsys.readouterr().err
    assert error.startswith(
        "mrlm-train grpo: NonFiniteError: non-finite value (tensor of shape (2,)) at step 1 "
        "in rewards (as returned by the env); last checkpoint: none"
    )


@pytest.mark.slow
def test_run_writes_metrics_and_a_loadable_model_and_resumes_exactly(
    tmp_path: Path, odd_letters: str
) -> None:
    from transformers import AutoModelForCausalLM

    env = {"env_id": odd_letters, "env_kwargs": "{}"}  # rewards that differ within groups: real updates
    straight = _config(
        tmp_path / "a", run=RunConfig(output_dir=str(tmp_path / "a"), max_steps=4, progress_bar=False), **env
    )
    final = train(straight)
    rows = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    assert all(key in rows[0] for key in ("reward", "loss", "kl", "clip_fraction", "tokens_per_s"))
    assert all(row["grad_norm"] > 0 for row in rows)
    assert AutoModelForCausalLM.from_pretrained(final) is not None

    first = RunConfig(output_dir=str(tmp_path / "b"), max_steps=2, save_every=2, progress_bar=False)
    train(_config(tmp_path, run=first, **env))
    second = dataclasses.replace(first, max_steps=4, resume="latest")
    train(_config(tmp_path, run=second, **env))
    resumed = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in resumed] == [1, 2, 3, 4]
    for a, b in zip(rows, resumed, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-6)
        assert a["reward"] == b["reward"]
    expected, got = _final_weights(tmp_path / "a"), _final_weights(tmp_path / "b")
    assert all(torch.equal(got[name], expected[name]) for name in expected)


def test_yaml_config_fills_the_dataclasses_and_names_bad_keys(tmp_path: Path) -> None:
    good = tmp_path / "run.yaml"
    good.write_text("env_kwargs: {level: 2}\ngroup_size: 4\nrun: {max_steps: 7, output_dir: out}\n")
    config = load_config(GRPOConfig, good)
    assert config.parsed_env_kwargs() == {"level": 2}
    assert (config.group_size, config.run.max_steps, config.run.output_dir) == (4, 7, "out")
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: {max_stpes: 3}\n")
    with pytest.raises(ConfigError, match=r"unknown key 'max_stpes' \(did you mean 'max_steps'\?\)"):
        load_config(GRPOConfig, bad)


def test_cli_flags_override_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[GRPOConfig] = []
    monkeypatch.setattr("mrlm.train.cli.COMMANDS", _capturing_commands(seen))
    config_file = tmp_path / "run.yaml"
    config_file.write_text("group_size: 4\nprompts_per_step: 3\nmicro_batch_size: 4\n")
    assert main(["grpo", "--config", str(config_file), "--prompts-per-step", "2"]) == 0
    assert (seen[0].group_size, seen[0].prompts_per_step) == (4, 2)
    assert main(["grpo", "--config", str(tmp_path / "missing.yaml")]) == 1
    assert "ConfigError: config file" in capsys.readouterr().err


def _capturing_commands(seen: list[GRPOConfig]) -> tuple[object, ...]:
    from mrlm.train import commands

    def capture(config: GRPOConfig) -> int:
        seen.append(config)
        return 0

    return tuple(dataclasses.replace(c, run=capture) if c.name == "grpo" else c for c in commands.COMMANDS)


class _OddLettersPay(OneTurnEnv):
    """Pays 1 for a reply with an odd count of the letter "e", else 0: rewards that differ within a
    group for any model, so every step has advantages and gradients."""

    prompt = "Write a word."

    def reward(self, action: str) -> float:
        return float(action.count("e") % 2)


ODD_LETTERS = "mrlm-test/OddLettersPay-v0"


@pytest.fixture
def odd_letters(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The id, registered for this test only (an env server hosts registered envs)."""
    from mrlm.envs import registry

    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    registry.register_env(
        ODD_LETTERS, description="Pays an odd count of e.", gymnasium_entry_point=f"{__name__}:_OddLettersPay"
    )
    yield ODD_LETTERS
    gymnasium.registry.pop(ODD_LETTERS)


def _cli_argv(env_id: str, out: Path, *more: str) -> list[str]:
    """``mrlm-train grpo`` on ``env_id``, 4 small steps into ``out``."""
    return [
        "grpo",
        "--env-id",
        env_id,
        "--env-kwargs",
        "{}",
        "--group-size",
        "4",
        "--prompts-per-step",
        "2",
        "--max-new-tokens",
        "8",
        "--micro-batch-size",
        "4",
        "--optim.learning-rate",
        "1e-3",
        "--run.max-steps",
        "4",
        "--run.output-dir",
        str(out),
        "--run.no-progress-bar",
        *more,
    ]


def _metric_rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def _final_weights(out: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(out / "final" / "model.safetensors")


def test_a_run_whose_env_server_goes_away_keeps_its_last_step_and_resumes_exactly(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    odd_letters: str,
) -> None:
    """The env server stops during step 3's rollout: the command fails in one line, step 2 is saved
    (save_every is 0), and a run resumed from it on a new server ends with the same weights as a run
    that was never interrupted."""
    from mrlm.envs.server import serve
    from mrlm.train.algorithms import grpo

    def remote(address: str) -> str:
        return f"grpc://{address}/{odd_letters}"

    with serve(envs=(odd_letters,), port=0) as server:
        assert main(_cli_argv(remote(server.address), tmp_path / "straight")) == 0
    straight = _metric_rows(tmp_path / "straight")
    assert all(row["grad_norm"] > 0 for row in straight)  # every step really changes the model

    collect = grpo.collect_batch
    calls = []
    with serve(envs=(odd_letters,), port=0) as server, monkeypatch.context() as patch:

        def collect_until_the_server_goes(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 3:
                server.stop()  # idempotent: the block's end stops it again, as it would on a failure
            return collect(*args, **kwargs)

        patch.setattr(grpo, "collect_batch", collect_until_the_server_goes)
        assert main(_cli_argv(remote(server.address), tmp_path / "failed")) == 1
    error = capsys.readouterr().err
    assert error.strip().splitlines()[-1].startswith("mrlm-train grpo: ServerUnavailableError: ")
    assert "stopped during step 3 (ServerUnavailableError); step 2 is saved as" in caplog.text
    assert [row["step"] for row in _metric_rows(tmp_path / "failed")] == [1, 2]
    assert (tmp_path / "failed" / "checkpoints" / "step-000002").is_dir()

    with serve(envs=(odd_letters,), port=0) as again:
        resumed = _cli_argv(remote(again.address), tmp_path / "failed", "--run.resume", "latest")
        assert main(resumed) == 0
    for a, b in zip(straight, _metric_rows(tmp_path / "failed"), strict=True):
        assert (a["step"], a["reward"]) == (b["step"], b["reward"])
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5, abs=1e-6)
    expected, got = _final_weights(tmp_path / "straight"), _final_weights(tmp_path / "failed")
    assert all(torch.equal(got[name], expected[name]) for name in expected)


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_ends_the_command_in_one_line_with_its_last_step_saved(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    odd_letters: str,
    signal_name: str,
) -> None:
    """The signal arrives during step 3's rollout (Ctrl-C, or a scheduler preempting the job): the
    status shells report for it, one line instead of a traceback, and step 2 saved for
    --run.resume; the handler of SIGTERM is the one before the command again afterwards."""
    import signal

    from mrlm.train.algorithms import grpo
    from mrlm.train.cli import entry

    collect = grpo.collect_batch
    calls = []

    def collect_until_the_signal(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), getattr(signal, signal_name))
        return collect(*args, **kwargs)

    monkeypatch.setattr(grpo, "collect_batch", collect_until_the_signal)
    monkeypatch.setattr("sys.argv", ["mrlm-train", *_cli_argv(odd_letters, tmp_path / "run")])
    # Ctrl-C as a terminal's foreground process gets it: a suite started in the background passes
    # SIGINT on ignored. The suite's own handler comes back afterwards.
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exit_info:
            entry()
    finally:
        signal.signal(signal.SIGINT, interrupt)
    assert exit_info.value.code == 128 + getattr(signal, signal_name)  # 130, 143
    said = "interrupted" if signal_name == "SIGINT" else "terminated (SIGTERM)"
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"mrlm-train: {said}"
    assert (tmp_path / "run" / "checkpoints" / "step-000002").is_dir()
    assert [row["step"] for row in _metric_rows(tmp_path / "run")] == [1, 2]
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_lora_run_starts_from_its_seed(tmp_path: Path, odd_letters: str) -> None:
    # LoRA's A was drawn before the session seeded torch: two runs of one seed started apart (B = 0
    # hides it from the first rollout and loss, not from the first gradient of B).
    norms = []
    for name in ("first", "second"):
        run = RunConfig(output_dir=str(tmp_path / name), max_steps=1, progress_bar=False)
        model = ModelConfig(name_or_path="tiny", lora_r=4)
        train(_config(tmp_path, env_id=odd_letters, env_kwargs="{}", model=model, run=run))
        (row,) = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        norms.append(row["grad_norm"])
    assert norms[0] > 0 and norms[0] == norms[1]
