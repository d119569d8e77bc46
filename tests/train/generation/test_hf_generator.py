"""HFGenerator: greedy equals model.generate, seeded sampling, stops, logprobs, side effects."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.chat_template import ENDOFTEXT, IM_END
from mrlm.train.generation import (
    Completion,
    Generator,
    HFGenerator,
    SamplingParams,
    token_logprobs,
)
from tests.train.generation.lively import build_lively_model

TEXTS = ["Hello there", "What is 2 + 2?", "a", "The quick brown fox jumps over the lazy dog", "x = 3"]


@pytest.fixture(scope="module")
def prompts(tokenizer: Any) -> list[list[int]]:
    return [tokenizer.encode(text) for text in TEXTS]


@pytest.fixture(scope="module")
def generator(lively_model: Any, tokenizer: Any) -> HFGenerator:
    return HFGenerator(lively_model, tokenizer)


def _hf_greedy(model: Any, tokenizer: Any, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """model.generate's greedy continuations, pads after a stop included."""
    width = max(len(p) for p in prompts)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    out = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens, do_sample=False
    )
    return [row[width:].tolist() for row in out]


def test_is_a_generator(generator: HFGenerator) -> None:
    assert isinstance(generator, Generator)


def test_default_stop_ids_are_the_eos_ids(generator: HFGenerator, tokenizer: Any) -> None:
    ids = tokenizer.convert_tokens_to_ids([IM_END, ENDOFTEXT])
    assert generator.default_stop_ids == tuple(ids)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_greedy_matches_model_generate(
    arch: str, lively_model: Any, tokenizer: Any, prompts: list[list[int]]
) -> None:
    model = lively_model if arch == "qwen2" else build_lively_model(tokenizer, arch=arch)
    generator = HFGenerator(model, tokenizer)
    budget = 40
    ours = generator.generate(prompts, SamplingParams(max_new_tokens=budget, temperature=0.0))
    reference = _hf_greedy(model, tokenizer, prompts, budget)
    stop_ids = set(generator.default_stop_ids)
    reasons = set()
    for completion, expected in zip(ours, reference, strict=True):
        n = len(completion.token_ids)
        assert completion.token_ids == expected[:n]
        reasons.add(completion.finish_reason)
        if completion.finish_reason == "stop":
            assert completion.token_ids[-1] in stop_ids
            assert not stop_ids & set(completion.token_ids[:-1])
            assert all(t == tokenizer.pad_token_id for t in expected[n:])  # generate pads after a stop
        else:
            assert n == budget and not stop_ids & set(completion.token_ids)
    assert reasons == {"stop", "length"}, "the prompts should exercise both endings"


def test_same_seed_same_completions(generator: HFGenerator, prompts: list[list[int]]) -> None:
    params = SamplingParams(max_new_tokens=24, temperature=1.0, seed=7)
    first = generator.generate(prompts, params)
    assert generator.generate(prompts, params) == first
    other = generator.generate(prompts, SamplingParams(max_new_tokens=24, temperature=1.0, seed=8))
    assert [c.token_ids for c in other] != [c.token_ids for c in first]


def test_unseeded_sampling_follows_torch_manual_seed(
    generator: HFGenerator, prompts: list[list[int]]
) -> None:
    params = SamplingParams(max_new_tokens=8)
    with torch.random.fork_rng(devices=[]):  # leave the global RNG as other tests found it
        torch.manual_seed(123)
        first = generator.generate(prompts, params)
        torch.manual_seed(123)
        assert generator.generate(prompts, params) == first


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(max_new_tokens=24, temperature=1.0, seed=1),
        SamplingParams(max_new_tokens=24, temperature=0.7, top_p=0.9, top_k=50, seed=2),
        SamplingParams(max_new_tokens=24, temperature=0.0),
    ],
    ids=["plain", "truncated", "greedy"],
)
def test_logprobs_equal_recomputation(
    generator: HFGenerator, lively_model: Any, prompts: list[list[int]], params: SamplingParams
) -> None:
    completions = generator.generate(prompts, params)
    # Right-padded [prompt + completion] rows, as a trainer would batch them.
    rows = [p + c.token_ids for p, c in zip(prompts, completions, strict=True)]
    width = max(len(r) for r in rows)
    input_ids = torch.zeros((len(rows), width), dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    completion_mask = torch.zeros_like(input_ids)
    recorded = torch.zeros((len(rows), width))
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        input_ids[i, : len(rows[i])] = torch.tensor(rows[i])
        attention[i, : len(rows[i])] = 1
        completion_mask[i, len(p) : len(rows[i])] = 1
        recorded[i, len(p) : len(rows[i])] = torch.tensor(c.logprobs)
    with torch.no_grad():
        recomputed = token_logprobs(lively_model, input_ids, attention, completion_mask, params.temperature)
    torch.testing.assert_close(recomputed, recorded, atol=1e-4, rtol=0)
    assert bool((recorded[completion_mask.bool()] < 0).all())


def test_ignore_stop_generates_the_full_budget(generator: HFGenerator, prompts: list[list[int]]) -> None:
    completions = generator.generate(prompts, SamplingParams(max_new_tokens=30, ignore_stop=True, seed=0))
    assert all(len(c.token_ids) == 30 and c.finish_reason == "length" for c in completions)


def test_explicit_stop_ids(generator: HFGenerator, prompts: list[list[int]]) -> None:
    free = generator.generate(prompts, SamplingParams(max_new_tokens=30, ignore_stop=True, seed=4))
    # Stop at whatever token the first completion produced fifth: same noise, so it ends right there.
    stop = free[0].token_ids[4]
    stopped = generator.generate(prompts, SamplingParams(max_new_tokens=30, stop_token_ids=(stop,), seed=4))
    first = stopped[0]
    assert first.finish_reason == "stop" and first.token_ids[-1] == stop
    assert first.token_ids == free[0].token_ids[: free[0].token_ids.index(stop) + 1]
    for completion in stopped:
        assert completion.token_ids.count(stop) == (completion.finish_reason == "stop")


def test_a_stop_on_the_last_step_is_a_stop(generator: HFGenerator, prompts: list[list[int]]) -> None:
    free = generator.generate(prompts, SamplingParams(max_new_tokens=6, ignore_stop=True, seed=5))
    stop = free[0].token_ids[5]
    if stop in free[0].token_ids[:5]:
        pytest.skip("the sixth token also appears earlier")
    ended = generator.generate(prompts, SamplingParams(max_new_tokens=6, stop_token_ids=(stop,), seed=5))[0]
    assert ended == Completion(free[0].token_ids, free[0].logprobs, "stop")


def test_restores_train_mode_and_leaves_the_tokenizer_alone(
    lively_model: Any, tokenizer: Any, prompts: list[list[int]]
) -> None:
    side = tokenizer.padding_side
    generator = HFGenerator(lively_model, tokenizer)
    lively_model.train()
    try:
        generator.generate(prompts[:2], SamplingParams(max_new_tokens=3, seed=0))
        assert lively_model.training
    finally:
        lively_model.eval()
    generator.generate(prompts[:2], SamplingParams(max_new_tokens=3, seed=0))
    assert not lively_model.training
    assert tokenizer.padding_side == side


def test_edge_inputs(generator: HFGenerator) -> None:
    assert generator.generate([], SamplingParams()) == []
    with pytest.raises(ValueError, match="at least one token"):
        generator.generate([[1, 2], []], SamplingParams())
