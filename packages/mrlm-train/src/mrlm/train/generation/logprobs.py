"""Recomputing the log-probs of given tokens with one forward pass (old, new and reference policy)."""

from __future__ import annotations

from typing import Any

import torch

from mrlm.train.generation.sampling import selected_logprobs


def position_ids_from_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """``[B, T]`` positions counting only attended tokens, so left and right padding both work.

    Padding slots get position 0 (never attended, so their value does not matter).
    """
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Log-prob of every masked token given the tokens before it, in one forward pass.

    Uses the convention of :mod:`mrlm.train.generation.base`: ``log softmax(logits / T)`` with ``T``
    the sampling temperature (1 for greedy), so on the weights that sampled them these equal the
    log-probs a :class:`~mrlm.train.generation.base.Generator` recorded (up to float error).

    Gradients flow unless the caller wraps the call in ``torch.no_grad()``.

    Args:
        model: a causal LM returning ``.logits`` ``[B, T, V]``.
        input_ids: ``[B, T]`` whole sequences (prompt, completions, environment turns, padding).
        attention_mask: ``[B, T]`` 1 on real tokens, 0 on padding (left or right).
        completion_mask: ``[B, T]`` 1 on the tokens to score; position 0 is never scored (it has no
            context).
        temperature: the sampling temperature the tokens were drawn at.

    Returns:
        ``[B, T]`` float32 log-probs aligned with ``input_ids``; 0 where ``completion_mask`` is 0.
    """
    logits = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids_from_mask(attention_mask),
        use_cache=False,
    ).logits  # [B, T, V]
    # Row by row: a float32 copy of one row's [T, V] logits at a time, not of the whole batch.
    shifted = torch.stack(
        [
            selected_logprobs(row[:-1], ids[1:], temperature)
            for row, ids in zip(logits, input_ids, strict=True)
        ]
    )  # [B, T - 1]: token t+1 given tokens <= t
    logp = torch.nn.functional.pad(shifted, (1, 0))  # [B, T]
    return torch.where(completion_mask.bool(), logp, torch.zeros_like(logp))
