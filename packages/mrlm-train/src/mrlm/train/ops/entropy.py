"""The entropy of the policy's next-token distributions, for an entropy bonus."""

from __future__ import annotations

import torch

from mrlm.train.generation.base import logprob_temperature


def token_entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``[...]`` entropy ``-sum_v p_v log p_v`` of ``softmax(logits / T)`` over the last dim.

    ``T`` follows the log-prob convention of :mod:`mrlm.train.generation.base` (the sampling
    temperature; 1 for greedy), so the entropy is that of the distribution the tokens were drawn
    from. Computed in float32; differentiable in ``logits``.
    """
    logp = torch.log_softmax(logits.float() / logprob_temperature(temperature), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)
