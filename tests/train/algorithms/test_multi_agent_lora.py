"""policies="lora": one frozen base, one LoRA adapter per agent. Each agent's loss reaches only its
own adapter, a step moves every adapter and never the base, the final adapters load with peft and
give the trained logits, a run resumes exactly, and settings it cannot run are refused."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from peft import PeftModel

from mrlm.envs import DatasetTaskEnv
from mrlm.train.adapters import AdapterSetupError, AgentAdapter, agent_adapters, base_references
from mrlm.train.algorithms import magrpo
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.cpu_threads import independent_cpu_models
from mrlm.train.policy import ModelConfig, load_policy

AGENTS = ("red", "green", "blue")
#: Metrics that measure time, not what was computed.
TIMINGS = ("tokens_per_s", "step_s", "rollout_s", "time")


@pytest.fixture
def views() -> dict[str, AgentAdapter]:
    adapters, _ = agent_adapters(ModelConfig(name_or_path="tiny", lora_r=4), AGENTS, seed=0)
    return adapters


def _ids() -> torch.Tensor:
    return torch.tensor([[5, 17, 42, 9, 100, 3], [7, 7, 250, 31, 8, 64]])


def _loss(view: torch.nn.Module) -> torch.Tensor:
    # Any differentiable function of the logits: the mean log-prob of the inputs' next tokens.
    ids = _ids()
    logp = torch.log_softmax(view(input_ids=ids).logits[:, :-1], dim=-1)
    return -logp.gather(-1, ids[:, 1:, None]).mean()


def _base_weights(view: AgentAdapter) -> dict[str, torch.Tensor]:
    model = view.shared.model
    return {name: param.detach().clone() for name, param in model.named_parameters() if "lora_" not in name}


def _set_lora_b(view: AgentAdapter, value: float) -> None:
    # LoRA starts as the identity (B = 0); a B of its own makes the adapter visible in the logits.
    with torch.no_grad():
        for name, param in view.adapter.items():
            if "lora_B" in name:
                param.fill_(value)


def test_each_view_holds_exactly_its_own_adapter(views: dict[str, AgentAdapter]) -> None:
    every = [id(p) for view in views.values() for p in view.parameters()]
    assert len(every) == len(set(every))  # no weight in two views
    model = views["red"].shared.model
    lora = {id(p) for name, p in model.named_parameters() if "lora_" in name}
    assert set(every) == lora  # together the views hold every adapter weight, and no base weight
    for agent, view in views.items():
        names = [name for name, _ in model.named_parameters() if id(_) in {id(p) for p in view.parameters()}]
        assert names and all(f".{agent}." in name for name in names)
        assert all(p.requires_grad for p in view.parameters())
    assert not any(p.requires_grad for name, p in model.named_parameters() if "lora_" not in name)


def test_lora_rank_comes_from_the_model_config_and_defaults_to_8() -> None:
    ranked, _ = agent_adapters(ModelConfig(name_or_path="tiny", lora_r=4), ["x"], seed=0)
    default, _ = agent_adapters(ModelConfig(name_or_path="tiny"), ["x"], seed=0)
    first = next(name for name in ranked["x"].adapter if "lora_A" in name)
    assert ranked["x"].adapter[first].shape[0] == 4
    assert default["x"].adapter[first].shape[0] == 8


def test_an_agents_loss_has_gradients_on_its_adapter_only(views: dict[str, AgentAdapter]) -> None:
    for view in views.values():
        _set_lora_b(view, 0.01)  # with B = 0 the gradient of A is 0 too
    # Forwards of every agent before one backward (as an update runs them): switching adapters
    # must leave the earlier agents' adapters trainable.
    losses = {agent: _loss(view) for agent, view in views.items()}
    losses["green"].backward()
    for agent, view in views.items():
        grads = [p.grad for p in view.parameters()]
        if agent == "green":
            assert all(g is not None and bool(g.abs().sum() > 0) for g in grads)
        else:
            assert all(g is None for g in grads), agent
    model = views["red"].shared.model
    assert all(p.grad is None for name, p in model.named_parameters() if "lora_" not in name)
    (losses["red"] + losses["blue"]).backward()  # the others' graphs were kept: their adapters train too
    assert all(p.grad is not None for agent in ("red", "blue") for p in views[agent].parameters())


def test_a_session_step_moves_every_adapter_and_never_the_base(
    views: dict[str, AgentAdapter], tmp_path: Path
) -> None:
    base = _base_weights(views["red"])
    before = {agent: {k: p.detach().clone() for k, p in v.adapter.items()} for agent, v in views.items()}
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    with TrainingSession(
        dict(views), run=run, optim=OptimConfig(learning_rate=1e-2), dist=DistributedConfig()
    ) as session:
        for agent in AGENTS:  # each optimizer holds its agent's adapter, nothing else
            optimized = {
                id(p) for group in session.trained(agent).optimizer.param_groups for p in group["params"]
            }
            assert optimized == {id(p) for p in views[agent].parameters()}
        session.backward(sum((_loss(session.models[agent]) for agent in AGENTS), torch.tensor(0.0)))
        stats = session.optimizer_step()
        assert all(stats[f"grad_norm/{agent}"] > 0 for agent in AGENTS[1:]) and stats["grad_norm"] > 0
    for agent, view in views.items():
        for name, param in view.adapter.items():
            if "lora_B" in name:  # B moved (A's first gradient is 0: B started at 0)
                assert not torch.equal(param, before[agent][name]), (agent, name)
    for name, param in views["red"].shared.model.named_parameters():
        if "lora_" not in name:
            assert torch.equal(param, base[name]), name


def test_the_base_reference_is_every_agents_initial_policy(views: dict[str, AgentAdapter]) -> None:
    references = base_references(views)
    with torch.no_grad():
        initial = views["red"](input_ids=_ids()).logits
        _set_lora_b(views["red"], 0.05)
        reference = references["red"](input_ids=_ids()).logits
        moved = views["red"](input_ids=_ids()).logits
    torch.testing.assert_close(reference, initial, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(moved, initial, rtol=1e-3, atol=1e-4)
    assert all(p.requires_grad for view in views.values() for p in view.parameters())


def test_moving_a_view_moves_the_shared_base(views: dict[str, AgentAdapter]) -> None:
    views["green"].to(torch.float64)
    assert {p.dtype for p in views["red"].shared.model.parameters()} == {torch.float64}
    assert views["red"].adapter[next(iter(views["red"].adapter))].dtype == torch.float64


def test_saved_adapters_load_with_peft_and_give_the_trained_logits(
    views: dict[str, AgentAdapter], tmp_path: Path
) -> None:
    for value, view in zip((0.02, -0.03, 0.04), views.values(), strict=True):
        _set_lora_b(view, value)
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    _, tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    with TrainingSession(dict(views), run=run, optim=OptimConfig(), dist=DistributedConfig()) as session:
        final = session.save_final(tokenizer)
    for view in views.values():
        view.eval()
    for agent, view in views.items():
        base, _ = load_policy(ModelConfig(name_or_path="tiny"))
        loaded = PeftModel.from_pretrained(base, final / agent).eval()
        with torch.no_grad():
            torch.testing.assert_close(
                loaded(input_ids=_ids()).logits, view(input_ids=_ids()).logits, rtol=1e-5, atol=1e-6
            )
        assert sorted(path.name for path in (final / agent).glob("adapter_*")) == [
            "adapter_config.json",
            "adapter_model.safetensors",
        ]


# ------------------------------------------------------------------ the trainer end to end


def _env() -> DatasetTaskEnv:
    """Two agents answer the same question; the team's reward is the length of their joint reply,
    which varies between samples, so every group has a signal."""

    def reward(replies: list[str], record: dict[str, Any]) -> float:
        return float(len(" ".join(replies))) / 10

    records = [{"q": "Say something."}, {"q": "Say more."}, {"q": "Say less."}]
    return DatasetTaskEnv(records, formatters=[lambda r: r["q"]] * 2, reward=reward)


def _config(output_dir: Path, **run: Any) -> MAGRPOConfig:
    return MAGRPOConfig(
        env_id="say",
        policies="lora",
        model=ModelConfig(name_or_path="tiny", lora_r=4),
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=4,
        kl_coef=0.1,
        num_iterations=2,
        micro_batch_size=2,
        run=RunConfig(output_dir=str(output_dir), progress_bar=False, **run),
        optim=OptimConfig(learning_rate=1e-2),
    )


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture
def one_thread() -> Iterator[None]:
    # Tiny models on a busy machine are many times slower with threads waiting for each other.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _adapter(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path / "adapter_model.safetensors")


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_a_run_trains_every_agents_adapter_and_resumes_exactly(tmp_path: Path) -> None:
    """Four steps straight, and two then two more from the step-2 checkpoint: the same metrics at
    every step and the same final adapters; each adapter trained (B left 0) and differs by agent."""
    straight = magrpo.train(_config(tmp_path / "straight", max_steps=4), env=_env)
    first = _config(tmp_path / "resumed", max_steps=2, save_every=2)
    magrpo.train(first, env=_env)
    resumed = dataclasses.replace(first, run=dataclasses.replace(first.run, max_steps=4, resume="latest"))
    final = magrpo.train(resumed, env=_env)

    rows, again = _metrics(tmp_path / "straight"), _metrics(tmp_path / "resumed")
    assert [row["step"] for row in again] == [row["step"] for row in rows] == [1, 2, 3, 4]
    for ours, theirs in zip(again, rows, strict=True):
        assert set(ours) == set(theirs)
        for key, value in theirs.items():
            if key not in TIMINGS:
                assert ours[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (theirs["step"], key)
    assert all(row["grad_norm"] > 0 and row["grad_norm/agent_1"] > 0 for row in rows)
    assert rows[-1]["kl"] > 0  # the policies left the base, their reference

    assert sorted(path.name for path in final.iterdir()) == ["agent_0", "agent_1"]
    adapters = {}
    for agent in ("agent_0", "agent_1"):
        resumed_weights, straight_weights = _adapter(final / agent), _adapter(straight / agent)
        assert set(resumed_weights) == set(straight_weights)
        for key, weight in straight_weights.items():
            torch.testing.assert_close(resumed_weights[key], weight, rtol=0, atol=0, msg=f"{agent}/{key}")
        assert any("lora_B" in key and bool(w.abs().sum() > 0) for key, w in resumed_weights.items())
        adapters[agent] = resumed_weights
    assert any(not torch.equal(adapters["agent_0"][k], adapters["agent_1"][k]) for k in adapters["agent_0"])


def test_views_over_one_base_are_never_run_at_once(views: dict[str, AgentAdapter]) -> None:
    # Each view runs the shared base with its own adapter made active: two threads running two views
    # would each compute with whichever adapter the other activated last.
    assert not independent_cpu_models(list(views.values()))


@pytest.mark.usefixtures("two_threads")
def test_with_two_threads_every_step_trains_every_agents_own_adapter(tmp_path: Path) -> None:
    """Run side by side on two threads, the views took turns activating their adapters under each
    other: one agent's adapter got no gradient each step, and one pass over fresh samples showed a
    ratio away from 1 (samples and losses computed with another agent's adapter)."""
    config = dataclasses.replace(
        _config(tmp_path / "run", max_steps=2), num_iterations=1, kl_coef=0.0, micro_batch_size=4
    )
    magrpo.train(config, env=_env)
    for row in _metrics(tmp_path / "run"):
        assert row["grad_norm"] > 0 and row["grad_norm/agent_1"] > 0, row  # agent_0 is the first
        assert abs(row["approx_kl"]) < 1e-6 and row["clip_fraction"] == 0.0, row


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dist": DistributedConfig(strategy="fsdp")}, "does not run under FSDP"),
        ({"agent_models": {"agent_0": "tiny"}}, "needs policies='per_agent'"),
        ({"policies": "adapters"}, "expected one of 'shared', 'per_agent', 'lora', got 'adapters'"),
    ],
)
def test_settings_lora_cannot_run_are_refused(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(_config(tmp_path), **changes)  # checks the settings again


def test_an_agent_name_peft_cannot_use_is_named() -> None:
    with pytest.raises(AdapterSetupError, match=r"\['team.lead'\]"):
        agent_adapters(ModelConfig(name_or_path="tiny"), ["team.lead", "other"], seed=0)


def test_without_peft_the_error_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "peft", None)  # as on a machine without peft
    with pytest.raises(ImportError, match=r"policies='lora' needs the peft package: pip install peft"):
        agent_adapters(ModelConfig(name_or_path="tiny"), ["first", "second"], seed=0)


@pytest.mark.usefixtures("one_thread")
def test_a_checkpoint_of_adapters_refuses_another_base(tmp_path: Path) -> None:
    """The adapters' checkpoint does not hold the base they were trained on; resuming them on another
    base (here the tiny model with other weights) is refused, where it used to train on silently."""
    from mrlm.train.loop.errors import CheckpointError
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny

    first = _config(tmp_path / "run", max_steps=1, save_every=1)
    magrpo.train(first, env=_env)
    tokenizer = build_tiny_tokenizer()
    other = save_tiny(tmp_path / "other", build_tiny_model(tokenizer, seed=5), tokenizer)
    on_other = dataclasses.replace(
        first,
        model=ModelConfig(name_or_path=str(other), lora_r=4),
        run=dataclasses.replace(first.run, max_steps=2, resume="latest"),
    )
    with pytest.raises(CheckpointError, match="not the base model they were trained on"):
        magrpo.train(on_other, env=_env)
    assert [row["step"] for row in _metrics(tmp_path / "run")] == [1]  # nothing trained
