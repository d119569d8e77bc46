"""Recomputing the log-probs of given tokens with one forward pass (old, new and reference policy)."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from mrlm.train.generation.direct import DirectModel, direct_model_or_reason
from mrlm.train.generation.sampling import row_chunks, selected_logprobs


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
    *,
    direct: bool = True,
) -> torch.Tensor:
    """Log-prob of every masked token given the tokens before it, in one forward pass.

    Uses the convention of :mod:`mrlm.train.generation.base`: ``log softmax(logits / T)`` with ``T``
    the sampling temperature (1 for greedy), so on the weights that sampled them these equal the
    log-probs a :class:`~mrlm.train.generation.base.Generator` recorded (up to float error).

    Gradients flow unless the caller wraps the call in ``torch.no_grad()``.

    Only what the scored tokens need is computed: the last position is not fed (it predicts nothing)
    and, when the model's forward takes ``logits_to_keep``, logits start at the position before the
    first scored column. Log-softmax runs over as many rows at a time as fit in
    :data:`~mrlm.train.generation.sampling.LOGITS_CHUNK_ELEMENTS` float32 elements. Llama, Qwen2
    and Mistral models run without their forward, computing a prompt shared by several rows once
    (:meth:`~mrlm.train.generation.direct.DirectModel.token_logprobs`); ``direct=False`` turns that off.

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
    scored = completion_mask.bool()
    length = input_ids.shape[1]
    if length < 2:
        return torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    runner = direct_model_or_reason(model, training=torch.is_grad_enabled()) if direct else None
    if isinstance(runner, DirectModel):
        return runner.token_logprobs(input_ids, attention_mask, completion_mask, temperature)
    logits, first = _scored_logits(model, input_ids, attention_mask, scored)
    return _logprobs_from(logits, input_ids, first, scored, temperature)


def token_logprobs_and_entropy(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """As :func:`token_logprobs` (through the model's forward), and the ``[B, T]`` entropy of the
    policy's distribution at every scored token (0 elsewhere), for an entropy bonus."""
    from mrlm.train.ops.entropy import token_entropy  # ops.entropy imports this package

    scored = completion_mask.bool()
    if input_ids.shape[1] < 2:
        zeros = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
        return zeros, zeros.clone()
    logits, first = _scored_logits(model, input_ids, attention_mask, scored)
    logp = _logprobs_from(logits, input_ids, first, scored, temperature)
    entropy = torch.nn.functional.pad(token_entropy(logits, temperature), (first, 0))
    return logp, torch.where(scored, entropy, torch.zeros_like(entropy))


def first_scored_column(scored: torch.Tensor) -> int:
    """The first column (>= 1) holding a scored token; with nothing scored, the last, so that a
    loss built on the result still depends on the model and can be differentiated (to zero)."""
    columns = scored[:, 1:].any(dim=0).nonzero()
    return int(columns[0]) + 1 if columns.numel() else scored.shape[1] - 1


def _scored_logits(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, scored: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """``[B, T - first, V]`` logits predicting tokens ``first ..`` by the model's forward, and ``first``."""
    first = first_scored_column(scored)
    inputs, attention = input_ids[:, :-1], attention_mask[:, :-1]  # position t predicts token t + 1
    keep = inputs.shape[1] - (first - 1)  # positions first - 1 .. T - 2
    extra = {"logits_to_keep": keep} if _takes_logits_to_keep(model) else {}
    logits = model(
        input_ids=inputs,
        attention_mask=attention,
        position_ids=position_ids_from_mask(attention),
        use_cache=False,
        **extra,
    ).logits[:, -keep:]  # [B, keep, V]: token first + j given tokens <= first - 1 + j
    return logits, first


def _logprobs_from(
    logits: torch.Tensor, input_ids: torch.Tensor, first: int, scored: torch.Tensor, temperature: float
) -> torch.Tensor:
    targets = input_ids[:, first:]
    shifted = torch.cat(
        [
            selected_logprobs(logits[rows], targets[rows], temperature)
            for rows in row_chunks(logits.shape[0], logits.shape[1] * logits.shape[2])
        ]
    )  # [B, T - first]
    logp = torch.nn.functional.pad(shifted, (first, 0))  # [B, T]
    return torch.where(scored, logp, torch.zeros_like(logp))


_LOGITS_TO_KEEP: dict[type, bool] = {}


def _takes_logits_to_keep(model: Any) -> bool:
    """Whether the causal LM under ``model`` (a DDP or peft wrapper passes it on) takes ``logits_to_keep``."""
    inner = getattr(model, "module", model)  # DistributedDataParallel
    base = inner.get_base_model() if hasattr(inner, "get_base_model") else inner  # peft
    kind = type(base)
    if kind not in _LOGITS_TO_KEEP:
        _LOGITS_TO_KEEP[kind] = "logits_to_keep" in inspect.signature(base.forward).parameters
    return _LOGITS_TO_KEEP[kind]
