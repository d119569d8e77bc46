"""Clipped policy-gradient surrogates and the ways to average them over tokens.

A loss here is a pure function of tensors; the algorithm composes them. Signs: functions return a
loss to *minimise*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

RatioLevel = Literal["token", "sequence"]
Aggregation = Literal["sequence_mean", "token_mean", "constant"]


@dataclass(frozen=True)
class SurrogateStats:
    """Detached statistics of one surrogate evaluation (averaged over masked tokens)."""

    clip_fraction: float  #: share of tokens whose ratio was clipped and the clip was active
    ratio_mean: float  #: mean importance ratio
    approx_kl: float  #: mean of (ratio - 1) - log(ratio): KL(old || new) estimate (k3)


def importance_ratio(
    logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, level: RatioLevel = "token"
) -> torch.Tensor:
    """``[B, T]`` importance ratio pi(y_t) / pi_old(y_t) at token or sequence level.

    ``"token"`` (PPO, GRPO): ``ratio_t = exp(logp_t - old_logp_t)``.
    ``"sequence"`` (Zheng et al. 2025, GSPO, eq. 7): one ratio per sequence, the geometric mean of its
    token ratios, ``exp(mean_t(logp_t - old_logp_t))`` over the masked tokens, broadcast to every
    token; its gradient flows through each token's ``logp``.
    """
    log_ratio = (logp - old_logp) * mask
    if level == "token":
        return torch.exp(log_ratio)
    if level == "sequence":
        lengths = mask.sum(dim=1).clamp(min=1.0)
        return torch.exp(log_ratio.sum(dim=1) / lengths).unsqueeze(1).expand_as(logp)
    raise ValueError(f"level must be 'token' or 'sequence', got {level!r}")


def check_clip_range(clip_low: float, clip_high: float) -> None:
    """Raise ValueError unless ``0 <= clip_low < 1`` and ``clip_high >= 0``: the ratio's clip interval
    ``[1 - clip_low, 1 + clip_high]`` must hold 1 and stay above 0."""
    if not 0 <= clip_low < 1:  # NaN too
        raise ValueError(f"clip_low must be in [0, 1), got {clip_low}")
    if not clip_high >= 0:
        raise ValueError(f"clip_high must be >= 0, got {clip_high}")


def clipped_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
) -> tuple[torch.Tensor, SurrogateStats]:
    """Per-token PPO clipped objective as a loss (Schulman et al. 2017, eq. 7), with asymmetric clipping.

    ::

        loss_t = -min(ratio_t * A, clip(ratio_t, 1 - clip_low, 1 + clip_high) * A)

    ``clip_high > clip_low`` is DAPO's clip-higher (Yu et al. 2025, section 3.1), which keeps room for
    low-probability tokens to grow.

    Args:
        ratio: ``[B, T]`` importance ratios (see :func:`importance_ratio`).
        adv: ``[B]`` sequence advantages or ``[B, T]`` token advantages.
        mask: ``[B, T]`` 1 on the model's tokens.

    Returns:
        ``[B, T]`` per-token losses (0 where ``mask`` is 0) and detached statistics.
    """
    if adv.dim() == 1:
        adv = adv.unsqueeze(1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    loss = -torch.minimum(unclipped, clipped) * mask
    with torch.no_grad():
        tokens = mask.sum().clamp(min=1.0)
        clip_active = (clipped < unclipped).float() * mask
        log_ratio = torch.log(ratio.clamp(min=1e-30))
        stats = SurrogateStats(
            clip_fraction=float(clip_active.sum() / tokens),
            ratio_mean=float((ratio * mask).sum() / tokens),
            approx_kl=float((((ratio - 1.0) - log_ratio) * mask).sum() / tokens),
        )
    return loss, stats


def aggregate(
    token_loss: torch.Tensor,
    mask: torch.Tensor,
    how: Aggregation,
    *,
    num_sequences: float | None = None,
    num_tokens: float | None = None,
    max_length: int | None = None,
) -> torch.Tensor:
    """Reduce ``[B, T]`` per-token losses to a scalar.

    - ``"sequence_mean"`` (GRPO): mean over sequences of each sequence's mean token loss,
      ``(1/B) sum_i (1/|y_i|) sum_t l_it``.
    - ``"token_mean"`` (DAPO): every token weighs the same, ``sum_it l_it / sum_i |y_i|``.
    - ``"constant"`` (Dr. GRPO): ``sum_it l_it / (B * max_length)``, a constant normaliser that does
      not favour short or long answers.

    When a batch is split into micro-batches for gradient accumulation, pass the *whole* batch's
    ``num_sequences`` (and ``num_tokens`` for ``token_mean``): the sum of the micro-batch losses is
    then exactly the loss of the whole batch.
    """
    sequences = float(token_loss.shape[0]) if num_sequences is None else num_sequences
    if how == "sequence_mean":
        per_sequence = token_loss.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return per_sequence.sum() / sequences
    if how == "token_mean":
        tokens = mask.sum().clamp(min=1.0) if num_tokens is None else torch.tensor(max(num_tokens, 1.0))
        return token_loss.sum() / tokens
    if how == "constant":
        if max_length is None:
            raise ValueError("aggregation 'constant' needs max_length (the generation budget in tokens)")
        return token_loss.sum() / (sequences * max_length)
    raise ValueError(f"aggregation must be 'sequence_mean', 'token_mean' or 'constant', got {how!r}")
