"""Per-token rewards for a critic: where they sit, a KL penalty, clipping and scaling.

``token_rewards`` is ``[B, T]`` with each turn's reward on the last token of its reply (see
:class:`~mrlm.train.rollout.batch.RolloutBatch`); ``mask`` is 1 on the model's own tokens.
"""

from __future__ import annotations

import torch


def rewards_on_actions(token_rewards: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``token_rewards`` with every reward that sits off the mask moved to the nearest masked token
    before it (the action it rewards), so that GAE sees it.

    A turn whose reply was empty has its reward on the token before the reply, which is not the
    model's; it belongs to the model's last action before it. A reward with no masked token before
    it (a row that never acted) stays where it is, and is dropped by anything that masks.
    """
    if token_rewards.shape != mask.shape or token_rewards.dim() != 2:
        raise ValueError(
            f"token_rewards and mask must both be [B, T], got {tuple(token_rewards.shape)} and {tuple(mask.shape)}"
        )
    active = mask.bool()
    stray = (~active) & (token_rewards != 0)
    if not bool(stray.any()):
        return token_rewards
    out = token_rewards.clone()
    for row, column in stray.nonzero().tolist():
        before = active[row, :column].nonzero()
        if before.numel():
            target = int(before[-1])
            out[row, target] += out[row, column]
            out[row, column] = 0.0
    return out


def kl_penalised_rewards(
    token_rewards: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    coef: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """InstructGPT's reward: the env's rewards minus ``coef`` times a per-token KL estimate.

    ::

        r'_t = r_t - coef * (log pi(y_t) - log pi_ref(y_t))    on the model's tokens

    (the k1 estimator of KL(pi || pi_ref), on tokens sampled from ``pi``; its sum over a reply is
    an unbiased estimate of the reply's KL). Log-probs are those of the sampling policy.

    Returns:
        ``(rewards, kl)``: ``[B, T]`` penalised rewards and the ``[B, T]`` per-token KL estimates,
        both 0 where ``mask`` is 0.
    """
    kl = (logp.detach().float() - ref_logp.detach().float()) * mask
    return token_rewards - coef * kl, kl


def clip_rewards(token_rewards: torch.Tensor, bound: float) -> torch.Tensor:
    """Every reward clipped to ``[-bound, bound]`` (``bound > 0``)."""
    if bound <= 0:
        raise ValueError(f"the reward clip bound must be positive, got {bound}")
    return token_rewards.clamp(-bound, bound)
