"""PPO: its loss against plain-Python arithmetic, the value head against the model's own forward,
and short runs of both critic kinds that log the documented metrics, save and resume."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Literal

import pytest
import torch

from mrlm.train import value as value_module
from mrlm.train.algorithms.ppo import METRICS, PPOConfig, Scored, ppo_loss, train
from mrlm.train.generation.logprobs import token_logprobs, token_logprobs_and_entropy
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.ops.entropy import token_entropy
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout.batch import RolloutBatch
from mrlm.train.value import VALUE_HEAD_FILE, PolicyWithValueHead, load_policy_with_value_head


def _batch(old_logprobs: torch.Tensor, mask: torch.Tensor) -> RolloutBatch:
    size, width = mask.shape
    return RolloutBatch(
        input_ids=torch.zeros(size, width, dtype=torch.long),
        attention_mask=torch.ones(size, width, dtype=torch.long),
        mask=mask,
        old_logprobs=old_logprobs,
        rewards=torch.zeros(size),
        groups=torch.arange(size),
    )


@pytest.mark.parametrize(("entropy_coef", "kl_in"), [(0.0, "reward"), (0.01, "loss")])
def test_the_ppo_loss_matches_its_definition_token_by_token(
    entropy_coef: float, kl_in: Literal["reward", "loss"]
) -> None:
    generator = torch.Generator().manual_seed(3)
    shape = (3, 5)
    mask = torch.tensor([[0, 1, 1, 1, 0], [0, 0, 1, 0, 1], [1, 1, 1, 1, 1]], dtype=torch.float32)
    old_logp = -torch.rand(shape, generator=generator) * 3 * mask
    logp = (old_logp + (torch.rand(shape, generator=generator) - 0.5)) * mask  # ratios well past the clip
    values = torch.randn(shape, generator=generator)
    old_values = values + (torch.rand(shape, generator=generator) - 0.5)
    returns = torch.randn(shape, generator=generator)
    adv = torch.randn(shape, generator=generator)
    entropy = torch.rand(shape, generator=generator) * 4
    ref = old_logp - 0.3 * mask
    config = PPOConfig(
        clip_range=0.2,
        value_clip_range=0.1,
        vf_coef=0.4,
        entropy_coef=entropy_coef,
        kl_coef=0.05,
        kl_in=kl_in,
    )
    loss, stats = ppo_loss(
        Scored(logp, values, entropy),
        _batch(old_logp, mask),
        advantages=adv,
        returns=returns,
        old_values=old_values,
        ref_logprobs=ref,
        config=config,
        num_tokens=7.5,
    )
    total = policy_total = value_total = 0.0
    for b in range(3):
        for t in range(5):
            if not mask[b, t]:
                continue
            ratio = math.exp(float(logp[b, t]) - float(old_logp[b, t]))
            a = float(adv[b, t])
            policy = -min(ratio * a, min(max(ratio, 0.8), 1.2) * a)
            v, vo, r = float(values[b, t]), float(old_values[b, t]), float(returns[b, t])
            value = 0.5 * max((v - r) ** 2, (vo + min(max(v - vo, -0.1), 0.1) - r) ** 2)
            term = policy + 0.4 * value - entropy_coef * float(entropy[b, t])
            if kl_in == "loss":
                log_ratio = float(ref[b, t]) - float(logp[b, t])
                term += 0.05 * (math.exp(log_ratio) - log_ratio - 1)
            total += term
            policy_total += policy
            value_total += value
    assert float(loss) == pytest.approx(total / 7.5, rel=1e-5)
    assert stats["policy/loss"] == pytest.approx(policy_total / 10, rel=1e-5)
    assert stats["value/loss"] == pytest.approx(value_total / 10, rel=1e-5)
    assert ("policy/entropy" in stats) == (entropy_coef > 0)


def _sequences(tokenizer: object) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(3, 200, (3, 12), generator=generator)
    attention = torch.ones_like(input_ids)
    attention[2, 9:] = 0  # right padding
    mask = torch.zeros(3, 12)
    mask[:, 5:9] = 1
    mask[0, 10:] = 1  # a second turn after env text
    return input_ids, attention, mask


def test_the_value_head_gives_the_policys_own_logprobs_and_entropy_and_saves_whole(tmp_path: Path) -> None:
    policy, tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    model = PolicyWithValueHead(policy)
    input_ids, attention, mask = _sequences(tokenizer)
    out = model(input_ids, attention, mask, 0.7, with_entropy=True)
    reference, entropy = token_logprobs_and_entropy(policy, input_ids, attention, mask, 0.7)
    assert torch.allclose(
        out.logprobs,
        token_logprobs(policy, input_ids, attention, mask, 0.7, direct=False),
        rtol=1e-4,
        atol=1e-5,
    )
    assert torch.allclose(out.logprobs, reference, rtol=1e-4, atol=1e-5)
    assert out.entropy is not None and torch.allclose(out.entropy, entropy, rtol=1e-4, atol=1e-5)
    assert float(out.values.detach().abs().max()) == 0.0  # the head starts at zero

    # The entropy at one token, from the model's full logits.
    with torch.no_grad():
        logits = policy(input_ids=input_ids[:1, :6]).logits[0, 4]
    assert float(entropy[0, 5].detach()) == pytest.approx(float(token_entropy(logits, 0.7)), rel=1e-4)

    with torch.no_grad():
        model.value_head.weight.normal_()
        model.value_head.bias.fill_(0.5)
        hidden = policy.model(input_ids=input_ids[:, :-1], attention_mask=attention[:, :-1]).last_hidden_state
        expected = model.value_head(hidden)[..., 0]
        values = model(input_ids, attention, mask).values
    # The value of token t's state sits at t, on the scored tokens only.
    expected = torch.nn.functional.pad(expected, (1, 0)) * mask
    assert torch.allclose(values, expected, rtol=1e-4, atol=1e-5)
    assert float(values[mask == 0].abs().max()) == 0.0

    # The same through the trunk's forward (the path taken where the weights cannot be read
    # directly, e.g. while FSDP shards them).
    with torch.no_grad():
        fast = model(input_ids, attention, mask, 0.7)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(value_module, "direct_model_or_reason", lambda *_, **__: "refused")
            slow = model(input_ids, attention, mask, 0.7)
    assert torch.allclose(fast.values, slow.values, rtol=1e-4, atol=1e-5)
    assert torch.allclose(fast.logprobs, slow.logprobs, rtol=1e-4, atol=1e-5)

    model.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / VALUE_HEAD_FILE).is_file()
    loaded = load_policy_with_value_head(tmp_path / "saved")
    with torch.no_grad():
        again = loaded(input_ids, attention, mask)
    assert torch.allclose(again.values, values, rtol=1e-5, atol=1e-6)
    with pytest.raises(FileNotFoundError, match=VALUE_HEAD_FILE):
        load_policy_with_value_head(tmp_path / "nothing")


def _config(tmp_path: Path, critic: str, steps: int, **extra: object) -> PPOConfig:
    return PPOConfig(
        env_kwargs='{"level": 1}',
        critic=critic,  # type: ignore[arg-type]
        prompts_per_step=2,
        group_size=2,
        max_new_tokens=6,
        ppo_epochs=2,
        mini_batch_size=2,
        micro_batch_size=1,
        kl_coef=0.05,
        run=RunConfig(output_dir=str(tmp_path / critic), max_steps=steps, save_every=2, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("critic", ["value_head", "model"])
def test_a_short_run_logs_every_documented_metric_saves_and_resumes_exactly(
    tmp_path: Path, critic: str
) -> None:
    extra = {"kl_target": 0.01, "entropy_coef": 0.01} if critic == "model" else {}
    final = train(_config(tmp_path, critic, 4, **extra))
    rows = [json.loads(line) for line in (tmp_path / critic / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    expected = set(METRICS) - ({"policy/entropy"} if critic == "value_head" else set())
    assert expected <= set(rows[0]), expected - set(rows[0])
    assert all(row["epochs"] == 2 for row in rows)
    if critic == "model":
        assert {"grad_norm/critic", "lr/critic"} <= set(rows[0])
        assert sorted(p.name for p in final.iterdir()) == ["critic", "policy"]
        assert rows[-1]["kl_coef"] != rows[0]["kl_coef"]  # adaptive
    else:
        assert (final / VALUE_HEAD_FILE).is_file()

    # Resuming at step 2 repeats steps 3-4 exactly.
    resumed = tmp_path / "resumed"
    shutil.copytree(
        tmp_path / critic / "checkpoints" / "step-000002", resumed / "checkpoints" / "step-000002"
    )
    config = _config(tmp_path, critic, 4, **extra)
    config.run.output_dir = str(resumed)
    config.run.resume = "latest"
    train(config)
    again = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in again] == [3, 4]
    for first, second in zip(rows[2:], again, strict=True):
        for key in ("reward", "loss", "value/loss", "kl_coef"):
            assert second[key] == pytest.approx(first[key], rel=1e-5, abs=1e-7), key


def test_target_kl_stops_the_epochs_early(tmp_path: Path) -> None:
    config = _config(tmp_path, "value_head", 1, target_kl=1e-12)
    config.ppo_epochs = 4
    config.optim = OptimConfig(learning_rate=1e-2)
    train(config)
    row = json.loads((tmp_path / "value_head" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["epochs"] == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kl_target": 0.1, "kl_in": "loss"}, "kl_in"),
        ({"critic_model": "tiny"}, 'critic="model"'),
        ({"mini_batch_size": 0}, "at least 1"),
        ({"lam": 1.5}, "gamma and lam"),
        ({"vf_coef": -1.0}, "vf_coef"),
    ],
)
def test_contradicting_settings_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PPOConfig(**overrides)  # type: ignore[arg-type]


def test_every_metric_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "ppo.md").read_text()
    missing = [name for name in METRICS if f"`{name}`" not in docs]
    assert not missing, missing


@pytest.mark.parametrize("critic", ["value_head", "model"])
def test_bf16_autocast_trains_both_critics(tmp_path: Path, critic: str) -> None:
    from mrlm.train.loop import DistributedConfig

    config = _config(tmp_path, critic, 1)
    config.dist = DistributedConfig(mixed_precision="bf16")
    train(config)
    row = json.loads((tmp_path / critic / "metrics.jsonl").read_text().splitlines()[0])
    assert all(math.isfinite(row[key]) for key in ("loss", "value/loss", "policy/loss", "grad_norm"))


def test_a_critic_of_its_own_weights_and_the_reward_switches(tmp_path: Path) -> None:
    """A value model loaded by name (here the tiny one) rather than copied from the policy, with
    rewards clipped and scaled by the batch's return std."""
    config = _config(tmp_path, "model", 2, critic_model="tiny", reward_clip=0.5, reward_scaling=True)
    final = train(config)
    rows = [json.loads(line) for line in (tmp_path / "model" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(math.isfinite(row["value/loss"]) for row in rows)
    assert (final / "critic" / "config.json").is_file()


def test_a_critic_that_cannot_read_the_policys_tokens_is_refused(tmp_path: Path) -> None:
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    small = build_tiny_model(tokenizer)
    small.resize_token_embeddings(16)
    small.save_pretrained(tmp_path / "small")
    with pytest.raises(ValueError, match="vocabulary of 16 tokens"):
        train(_config(tmp_path, "model", 1, critic_model=str(tmp_path / "small")))


def test_the_cli_says_in_one_line_that_a_critic_cannot_read_the_policys_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mrlm.train.cli import main
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

    small = build_tiny_model(build_tiny_tokenizer())
    small.resize_token_embeddings(16)
    small.save_pretrained(tmp_path / "small")
    argv = ["ppo", "--critic", "model", "--critic-model", str(tmp_path / "small"), "--run.max-steps", "1"]
    assert main([*argv, "--run.output-dir", str(tmp_path / "run"), "--run.no-progress-bar"]) == 1
    err = capsys.readouterr().err  # also transformers' progress bars, saving and loading
    last = err.strip().splitlines()[-1]
    assert "Traceback" not in err and last.startswith("mrlm-train ppo: CriticModelError: critic_model "), err
    assert "vocabulary of 16 tokens" in last


def test_a_value_model_loads_from_a_saved_policy_with_its_backbone(tmp_path: Path) -> None:
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer
    from mrlm.train.value import load_value_model

    policy = build_tiny_model(build_tiny_tokenizer(), seed=5)
    policy.save_pretrained(tmp_path / "policy")
    critic = load_value_model(ModelConfig(name_or_path=str(tmp_path / "policy")))
    assert critic.config.num_labels == 1 and critic.config.classifier_dropout == 0.0
    for name, tensor in policy.model.state_dict().items():
        assert torch.equal(critic.model.state_dict()[name], tensor), name


@pytest.mark.parametrize(
    ("where", "error"), [("missing", "FileNotFoundError"), ("file", "ModelNotFoundError")]
)
def test_a_critic_path_that_holds_no_model_is_named_in_one_line(
    tmp_path: Path, where: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from mrlm.train.cli import main

    path = tmp_path / "critic"
    if where == "file":
        path.write_text("not a model")
    argv = [
        "ppo",
        "--critic",
        "model",
        "--critic-model",
        str(path),
        "--run.output-dir",
        str(tmp_path / "run"),
    ]
    assert main([*argv, "--run.max-steps", "1", "--run.no-progress-bar"]) == 1
    printed = capsys.readouterr().err.strip().splitlines()
    assert (
        len(printed) == 1 and printed[0].startswith(f"mrlm-train ppo: {error}:") and str(path) in printed[0]
    )
