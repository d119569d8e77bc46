"""The critic's loss and how well it explains the returns.

A loss here is a pure function of tensors; the algorithm composes them (see :mod:`policy_loss`).
"""

from __future__ import annotations

import torch


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_range: float | None = 0.2,
) -> tuple[torch.Tensor, float]:
    """Per-token PPO value loss with the new values kept near the sampling-time ones.

    ::

        V_clip_t = old_V_t + clip(V_t - old_V_t, -clip_range, clip_range)
        loss_t   = 0.5 * max((V_t - R_t)^2, (V_clip_t - R_t)^2)

    (the pessimistic choice of the OpenAI baselines implementation of PPO); ``clip_range=None``
    gives the plain ``0.5 * (V_t - R_t)^2``.

    Args:
        values: ``[B, T]`` values of the critic being trained.
        old_values: ``[B, T]`` values of the same states when the batch was sampled (no gradient).
        returns: ``[B, T]`` regression targets (GAE's ``A_t + old_V_t``).
        mask: ``[B, T]`` 1 on the model's tokens.
        clip_range: how far a value may move from its old one before the clipped term takes over.

    Returns:
        ``[B, T]`` per-token losses (0 where ``mask`` is 0) and the share of masked tokens where the
        clipped term was the larger one (the clip was active).
    """
    values = values.float()
    old_values = old_values.detach().float()
    returns = returns.detach().float()
    unclipped = (values - returns) ** 2
    if clip_range is None:
        return 0.5 * unclipped * mask, 0.0
    if clip_range <= 0:
        raise ValueError(f"clip_range must be positive (or None), got {clip_range}")
    clipped_values = old_values + torch.clamp(values - old_values, -clip_range, clip_range)
    clipped = (clipped_values - returns) ** 2
    loss = 0.5 * torch.maximum(unclipped, clipped) * mask
    with torch.no_grad():
        active = (clipped > unclipped).float() * mask
        fraction = float(active.sum() / mask.sum().clamp(min=1.0))
    return loss, fraction


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """``1 - Var(R - V) / Var(R)`` over the masked tokens: 1 for a perfect critic, 0 for one that
    predicts the mean return, negative for one worse than that. NaN when the returns do not vary
    (their std below a millionth of the largest return or value)."""
    selected = mask.bool()
    if not bool(selected.any()):
        return float("nan")
    target = returns.detach().float()[selected]
    predicted = values.detach().float()[selected]
    residual = target - predicted
    variance = float(target.var(unbiased=False))
    # Returns that differ only by rounding (every reward 0, the returns then being A + V computed
    # in float32) do not vary: the ratio below would divide by that rounding.
    scale = max(float(target.abs().max()), float(predicted.abs().max()))
    if variance <= (1e-6 * scale) ** 2:
        return float("nan")
    return float(1.0 - residual.var(unbiased=False) / variance)
