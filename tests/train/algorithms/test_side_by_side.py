"""Separate CPU models generate and train side by side on a share of torch's threads each, with the
same completions and the same update as one after the other."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.algorithms import onpolicy
from mrlm.train.algorithms.onpolicy import Normalisers, Part, Rows, update_parts
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.generation.joint import generate_jointly
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.rollout import RolloutBatch, Trajectory, collate, sampler
from mrlm.train.rollout.policies import Policy, PolicyTable
from mrlm.train.tiny import build_tiny_model


@pytest.fixture
def side_by_side_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many jobs each side_by_side call of the sampler and the update got."""
    calls: list[int] = []

    def counting(jobs: Any) -> Any:
        calls.append(len(jobs))
        return side_by_side(jobs)

    from mrlm.train.loop.cpu_threads import side_by_side

    monkeypatch.setattr(sampler, "side_by_side", counting)
    monkeypatch.setattr(onpolicy, "side_by_side", counting)
    return calls


def _table(tokenizer: Any, models: Mapping[str, torch.nn.Module], seed: int | None) -> PolicyTable:
    sampling = SamplingParams(max_new_tokens=6, temperature=1.0, ignore_stop=True, seed=seed)
    return PolicyTable(
        {name: Policy(HFGenerator(m, tokenizer), tokenizer) for name, m in models.items()}, sampling
    )


def _in_turn(
    tokenizer: Any,
    models: Mapping[str, torch.nn.Module],
    requests: list[tuple[str, list[int]]],
    seed: int | None,
) -> list[Any]:
    """The round's completions made one call after the other, by a table of one model each, with
    the global RNG where the round started (seed 3), in request order (requests alternate a, b)."""
    torch.manual_seed(3)
    in_turn = []
    for index, name in enumerate(models):
        table = _table(tokenizer, {name: models[name]}, seed)
        params = sampler.round_params(table.sampling(name), 2, 1, index)
        in_turn.append(table[name].generator.generate([p for n, p in requests if n == name], params))
    return [in_turn[0][0], in_turn[1][0], in_turn[0][1], in_turn[1][1]]


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize("seed", [7, None])
def test_separate_models_generate_side_by_side_what_they_generate_in_turn(
    tokenizer: Any, side_by_side_calls: list[int], seed: int | None
) -> None:
    # Models of different shapes (those of one shape decode jointly: the next test).
    narrow = build_tiny_model(tokenizer, seed=2, hidden_size=32, num_heads=2, num_kv_heads=1)
    models = {"a": build_tiny_model(tokenizer, seed=1), "b": narrow}
    requests = [("a", [5, 6, 7]), ("b", [8, 9]), ("a", [10, 11]), ("b", [12, 13, 14])]

    torch.manual_seed(3)
    apart = sampler.generate_round(_table(tokenizer, models, seed), requests, call=2, turn=1)
    assert side_by_side_calls == [2]

    expected = _in_turn(tokenizer, models, requests, seed)
    assert [c.token_ids for c in apart] == [c.token_ids for c in expected]
    for got, want in zip(apart, expected, strict=True):
        torch.testing.assert_close(
            torch.tensor(got.logprobs), torch.tensor(want.logprobs), rtol=1e-5, atol=1e-6
        )


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize("seed", [7, None])
def test_separate_models_of_one_shape_decode_jointly_what_they_generate_in_turn(
    tokenizer: Any, side_by_side_calls: list[int], monkeypatch: pytest.MonkeyPatch, seed: int | None
) -> None:
    joint_calls: list[int] = []

    def counting(generators: Any, prompts: Any, params: Any) -> Any:
        joint_calls.append(len(generators))
        return generate_jointly(generators, prompts, params)

    monkeypatch.setattr(sampler, "generate_jointly", counting)
    models = {"a": build_tiny_model(tokenizer, seed=1), "b": build_tiny_model(tokenizer, seed=2)}
    requests = [("a", [5, 6, 7]), ("b", [8, 9]), ("a", [10, 11]), ("b", [12, 13, 14])]

    torch.manual_seed(3)
    joint = sampler.generate_round(_table(tokenizer, models, seed), requests, call=2, turn=1)
    assert (joint_calls, side_by_side_calls) == ([2], [])

    expected = _in_turn(tokenizer, models, requests, seed)
    assert [c.token_ids for c in joint] == [c.token_ids for c in expected]
    for got, want in zip(joint, expected, strict=True):
        torch.testing.assert_close(
            torch.tensor(got.logprobs), torch.tensor(want.logprobs), rtol=1e-4, atol=1e-5
        )


@pytest.mark.usefixtures("two_threads")
def test_models_sharing_weights_generate_in_turn(tokenizer: Any, side_by_side_calls: list[int]) -> None:
    model = build_tiny_model(tokenizer)
    requests = [("a", [5, 6, 7]), ("b", [8, 9])]
    completions = sampler.generate_round(_table(tokenizer, {"a": model, "b": model}, 7), requests, 0, 0)
    assert len(completions) == 2
    assert side_by_side_calls == []


def _rows(tokenizer: Any, seed: int) -> RolloutBatch:
    generator = torch.Generator().manual_seed(seed)
    trajectories = []
    for row in range(4):
        ids = torch.randint(5, len(tokenizer), (9 + row,), generator=generator).tolist()
        mask = [0] * 4 + [1] * (len(ids) - 4)
        trajectories.append(
            Trajectory(
                env_id="e",
                seed=row,
                group=0,
                messages=[],
                token_ids=ids,
                mask=mask,
                logprobs=[0.0] * len(ids),
            )
        )
    return collate(trajectories, tokenizer.pad_token_id)


def _loss(model: torch.nn.Module, advantages: torch.Tensor) -> Any:
    def loss_fn(micro: RolloutBatch, rows: Rows, norms: Normalisers) -> tuple[torch.Tensor, dict[str, float]]:
        logprobs = token_logprobs(model, micro.input_ids, micro.attention_mask, micro.mask, 1.0)
        loss = -(logprobs * micro.mask * advantages[rows].unsqueeze(1)).sum() / norms.num_tokens
        return loss, {"mean_logprob": float((logprobs.detach() * micro.mask).sum() / micro.mask.sum())}

    return loss_fn


def _update(
    tokenizer: Any, tmp_path: Path, name_models: bool, threads: int
) -> tuple[dict[str, torch.Tensor], Any]:
    models = {"a": build_tiny_model(tokenizer, seed=1), "b": build_tiny_model(tokenizer, seed=2)}
    with TrainingSession(
        models,
        run=RunConfig(output_dir=str(tmp_path / f"run-{name_models}"), progress_bar=False),
        optim=OptimConfig(learning_rate=1e-2),
        dist=DistributedConfig(cpu=True, cpu_threads=threads),
    ) as session:
        parts = {
            name: Part(
                _rows(tokenizer, seed=index),
                _loss(session.models[name], torch.tensor([1.0, -1.0, 0.5, -0.5]) * (index + 1)),
                model=session.models[name] if name_models else None,
            )
            for index, name in enumerate(models)
        }
        stats = update_parts(session, parts, micro_batch_size=3, num_iterations=2)
    weights = {
        f"{name}.{key}": value.detach().clone()
        for name, m in models.items()
        for key, value in m.named_parameters()
    }
    return weights, stats


@pytest.mark.usefixtures("two_threads")
def test_separate_models_update_side_by_side_as_in_one_backward(
    tokenizer: Any, tmp_path: Path, side_by_side_calls: list[int]
) -> None:
    # One thread for each model either way: the same kernels. (Some kernels sum in another order with
    # another thread count, and AdamW makes the last bits of a gradient near 0 visible.)
    together, together_stats = _update(tokenizer, tmp_path, name_models=False, threads=1)
    assert side_by_side_calls == []
    apart, apart_stats = _update(tokenizer, tmp_path, name_models=True, threads=2)
    assert side_by_side_calls == [2, 2, 2, 2]  # 2 iterations x 2 micro-batches, both parts each time
    assert together.keys() == apart.keys()
    for key, value in together.items():
        torch.testing.assert_close(apart[key], value, rtol=1e-5, atol=1e-7, msg=key)
    assert apart_stats.loss == pytest.approx(together_stats.loss, rel=1e-5)
    for name in ("a", "b"):
        assert apart_stats.parts[name].extras == pytest.approx(together_stats.parts[name].extras, rel=1e-5)
    assert apart_stats.grad_norm == pytest.approx(together_stats.grad_norm, rel=1e-5)
