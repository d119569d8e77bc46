"""Sampling parameters and the pure token-choice functions."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.generation import Completion, SamplingParams, logprob_temperature
from mrlm.train.generation.sampling import (
    inverse_cdf_sample,
    sample_next,
    selected_logprobs,
    truncate_logits,
)

INF = float("inf")


@pytest.mark.parametrize(
    "kwargs",
    [{"max_new_tokens": 0}, {"temperature": -0.1}, {"top_p": 0.0}, {"top_p": 1.5}, {"top_k": -1}],
)
def test_sampling_params_reject_bad_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SamplingParams(**kwargs)  # type: ignore[arg-type]


def test_completion_needs_one_logprob_per_token() -> None:
    with pytest.raises(ValueError, match="logprobs"):
        Completion([1, 2], [0.0], "length")


def test_logprob_temperature_is_one_for_greedy() -> None:
    assert logprob_temperature(0.0) == 1.0
    assert logprob_temperature(0.7) == 0.7


def test_selected_logprobs_is_log_softmax_at_temperature() -> None:
    logits = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    tokens = torch.tensor([2, 1])
    expected = torch.log_softmax(logits / 0.5, dim=-1)[[0, 1], tokens]
    torch.testing.assert_close(selected_logprobs(logits, tokens, 0.5), expected)
    # Greedy records log-probs at temperature 1.
    torch.testing.assert_close(
        selected_logprobs(logits, tokens, 0.0), torch.log_softmax(logits, -1)[[0, 1], tokens]
    )


def test_top_k_keeps_the_k_largest() -> None:
    logits = torch.tensor([[0.1, 3.0, 2.0, -1.0]])
    out = truncate_logits(logits, top_k=2, top_p=1.0)
    assert out.tolist() == [[-INF, 3.0, 2.0, -INF]]


def test_top_p_keeps_the_smallest_set_reaching_p() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log()
    # 0.5 < 0.7, 0.5 + 0.3 reaches it: two tokens kept.
    kept = truncate_logits(logits, top_k=0, top_p=0.7).isfinite()
    assert kept.tolist() == [[True, True, False, False]]
    # The most likely token survives any top_p.
    assert truncate_logits(logits, top_k=0, top_p=0.01).isfinite().tolist() == [[True, False, False, False]]
    # Order in the vocabulary does not matter.
    shuffled = logits[:, [2, 0, 3, 1]]
    assert truncate_logits(shuffled, top_k=0, top_p=0.7).isfinite().tolist() == [[False, True, False, True]]


def test_no_truncation_is_identity() -> None:
    logits = torch.randn(3, 7)
    assert torch.equal(truncate_logits(logits, top_k=0, top_p=1.0), logits)


def test_inverse_cdf_sample_follows_the_distribution() -> None:
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3]).expand(20_000, 4)
    uniforms = torch.rand(20_000, generator=torch.Generator().manual_seed(0))
    draws = inverse_cdf_sample(probs, uniforms)
    counts = torch.bincount(draws, minlength=4).float() / draws.numel()
    assert counts[1] == 0  # probability 0 is never drawn
    torch.testing.assert_close(counts, probs[0], atol=0.015, rtol=0)


def test_inverse_cdf_sample_edges() -> None:
    probs = torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.0, 0.5, 0.5, 0.0]])
    # u = 0 takes the first token of positive probability; u near 1 the last one.
    assert inverse_cdf_sample(probs, torch.tensor([0.0, 0.999999])).tolist() == [1, 2]


def test_sampling_needs_noise() -> None:
    with pytest.raises(ValueError, match="uniforms"):
        sample_next(torch.zeros(1, 3), SamplingParams(temperature=1.0), None)


def test_sample_next_greedy_and_seeded() -> None:
    logits = torch.randn(5, 11, generator=torch.Generator().manual_seed(1))
    tokens, logprobs = sample_next(logits, SamplingParams(temperature=0.0), None)
    assert torch.equal(tokens, logits.argmax(-1))
    torch.testing.assert_close(logprobs, torch.log_softmax(logits, -1).gather(-1, tokens[:, None]).squeeze(1))

    params = SamplingParams(temperature=0.8, top_k=5)
    first = sample_next(logits, params, torch.rand(5, generator=torch.Generator().manual_seed(3)))
    again = sample_next(logits, params, torch.rand(5, generator=torch.Generator().manual_seed(3)))
    assert torch.equal(first[0], again[0])
    top5 = logits.topk(5, dim=-1).indices
    assert all(int(t) in top5[row].tolist() for row, t in enumerate(first[0]))
    # Recorded before truncation: log softmax(logits / 0.8) over the whole vocabulary.
    expected = torch.log_softmax(logits / 0.8, -1).gather(-1, first[0][:, None]).squeeze(1)
    torch.testing.assert_close(first[1], expected)
    assert all(math.isfinite(x) for x in first[1].tolist())
