"""Choosing the next token from logits: temperature, top-k, top-p, greedy; and its log-prob.

Pure tensor functions, shared by the sampler and by log-prob recomputation so that both follow the
convention of :mod:`mrlm.train.generation.base` by construction.
"""

from __future__ import annotations

import torch

from mrlm.train.generation.base import SamplingParams, logprob_temperature


def selected_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """Log-prob of ``tokens`` under ``softmax(logits / logprob_temperature(temperature))``.

    Args:
        logits: ``[..., V]`` raw logits (any float dtype; computed in float32).
        tokens: ``[...]`` token ids.
        temperature: the sampling temperature (0 = greedy, recorded at temperature 1).

    Returns:
        ``[...]`` float32 log-probs. Differentiable in ``logits``.
    """
    scaled = logits.float() / logprob_temperature(temperature)
    return torch.log_softmax(scaled, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


LOGITS_CHUNK_ELEMENTS = 1 << 24
"""Most logits (float32 elements, 64 MiB) turned into log-probs at once when recomputing log-probs."""


def row_chunks(rows: int, elements_per_row: int) -> list[slice]:
    """Consecutive row ranges of at most :data:`LOGITS_CHUNK_ELEMENTS` elements (at least one row each)."""
    step = max(1, LOGITS_CHUNK_ELEMENTS // max(1, elements_per_row))
    return [slice(start, start + step) for start in range(0, rows, step)]


def truncate_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """``[B, V]`` logits with every token outside the top-k / top-p set at ``-inf``.

    ``top_k=0`` and ``top_p=1`` are no-ops. Top-p keeps the smallest prefix of the tokens sorted by
    probability whose mass reaches ``top_p``; the most likely token is always kept.
    """
    vocab = logits.shape[-1]
    if 0 < top_k < vocab:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Mass strictly before each token: a token is dropped once the tokens before it reach top_p.
        mass_before = torch.cumsum(probs, dim=-1) - probs
        drop_sorted = mass_before >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_next(
    logits: torch.Tensor, params: SamplingParams, uniforms: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick one token per row of ``[B, V]`` logits.

    Args:
        logits: ``[B, V]`` raw next-token logits.
        params: temperature (0 = greedy), top-k, top-p.
        uniforms: ``[B]`` numbers in ``[0, 1)``, the row's sampling noise; unused when greedy.

    Returns:
        ``tokens`` ``[B]`` (long) and their ``logprobs`` ``[B]`` (float32), the latter by
        :func:`selected_logprobs`: before truncation, at the recording temperature.
    """
    logits = logits.float()
    if params.greedy:
        tokens = logits.argmax(dim=-1)
    else:
        if uniforms is None:
            raise ValueError("sampling at a temperature > 0 needs uniforms")
        scaled = truncate_logits(logits / params.temperature, params.top_k, params.top_p)
        tokens = inverse_cdf_sample(torch.softmax(scaled, dim=-1), uniforms)
    return tokens, selected_logprobs(logits, tokens, params.temperature)


def inverse_cdf_sample(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """``[B]`` draws from the categorical distributions in the rows of ``[B, V]`` ``probs``.

    Row ``b`` takes the first token whose cumulative probability exceeds ``uniforms[b]`` (``[B]``, in
    ``[0, 1)``): exact, needs one random number per row (``torch.multinomial`` draws ``V``, several
    times slower on CPU), and lets the caller decide which noise each row gets. Tokens of probability
    0 are never drawn (``right=True`` skips flat steps of the CDF).
    """
    cdf = torch.cumsum(probs, dim=-1)
    # Scaling by the row total absorbs float32 rounding in the sum of the probabilities.
    u = uniforms.to(cdf.dtype).unsqueeze(-1) * cdf[:, -1:]
    tokens = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    return tokens.clamp_(max=probs.shape[-1] - 1)
