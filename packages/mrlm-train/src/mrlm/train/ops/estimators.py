"""Advantage estimators: baselines for sequence rewards, and GAE over tokens with a critic.

Sequence-level estimators take ``rewards: [B]`` with the ``G`` answers to one prompt laid out
contiguously (``B = n_groups * G``), as :func:`mrlm.train.ops.advantages.group_relative_advantages`
does; that function is the std-scaled (GRPO) variant of :func:`group_mean_advantages`.
"""

from __future__ import annotations

import torch


def _grouped(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """``rewards`` viewed as ``[n_groups, G]`` after checking shape, dtype and group size."""
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D [B], got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        raise ValueError(f"rewards must be a floating-point tensor, got {rewards.dtype}")
    if group_size < 2 or rewards.numel() % group_size != 0:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size} (need >= 2)")
    return rewards.view(-1, group_size)


def group_mean_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each reward minus the mean reward of its group (GRPO without std scaling).

    For the ``G`` answers to one prompt with rewards ``r_1..r_G``::

        A_i = r_i - (1/G) sum_j r_j

    This is Dr. GRPO's advantage (Liu et al. 2025, "Understanding R1-Zero-Like Training", which
    drops GRPO's division by the group std); for the std-scaled GRPO advantage use
    :func:`mrlm.train.ops.advantages.group_relative_advantages`.

    Args:
        rewards: ``[B]``, groups laid out contiguously: ``B = n_groups * group_size``.
        group_size: answers per prompt, ``G >= 2``.

    Returns:
        ``[B]`` advantages; each group sums to 0.
    """
    grouped = _grouped(rewards, group_size)
    return (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)


def leave_one_out_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """RLOO: each reward minus the mean reward of the *other* ``G - 1`` answers of its group.

    Kool et al. 2019 ("Buy 4 REINFORCE Samples, Get a Baseline for Free!"), applied to LLMs by
    Ahmadian et al. 2024 ("Back to Basics: Revisiting REINFORCE Style Optimization")::

        A_i = r_i - (1/(G-1)) sum_{j != i} r_j  =  G/(G-1) * (r_i - (1/G) sum_j r_j)

    The baseline does not depend on ``r_i``, so the policy gradient stays unbiased.

    Args:
        rewards: ``[B]``, groups laid out contiguously: ``B = n_groups * group_size``.
        group_size: answers per prompt, ``G >= 2``.

    Returns:
        ``[B]`` advantages; each group sums to 0.
    """
    grouped = _grouped(rewards, group_size)
    others_mean = (grouped.sum(dim=1, keepdim=True) - grouped) / (group_size - 1)
    return (grouped - others_mean).reshape(-1)


def max_baseline_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Each reward minus the best reward of its group::

        A_i = r_i - max_j r_j

    A variant of ReMax (Li et al. 2024, "ReMax"), whose baseline is the reward of the greedy
    answer to the prompt; here the baseline is simply the group's best reward, with no extra greedy
    rollout. Every advantage is ``<= 0``: the best answers of a group get 0, the others are pushed
    down by how far they fall short. (Unlike the other baselines this one depends on ``r_i``, so the
    gradient is biased.)

    Args:
        rewards: ``[B]``, groups laid out contiguously: ``B = n_groups * group_size``.
        group_size: answers per prompt, ``G >= 2``.

    Returns:
        ``[B]`` advantages, all ``<= 0``.
    """
    grouped = _grouped(rewards, group_size)
    return (grouped - grouped.max(dim=1, keepdim=True).values).reshape(-1)


def no_baseline_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Plain REINFORCE (Williams 1992): the advantage is the reward itself, ``A_i = r_i``.

    Args:
        rewards: ``[B]`` one reward per sequence.

    Returns:
        ``[B]`` a copy of ``rewards`` (writing to it leaves ``rewards`` unchanged).
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D [B], got shape {tuple(rewards.shape)}")
    return rewards.clone()


def batch_normalised_advantages(rewards: torch.Tensor, *, eps: float = 1e-8) -> torch.Tensor:
    """Rewards normalised over the whole batch (REINFORCE++'s global advantage normalisation).

    Hu 2025 ("REINFORCE++"), for the ``B`` rewards of the batch::

        A_i = (r_i - mean(r)) / (std(r) + eps)

    The std uses Bessel's correction (``B - 1``), like
    :func:`mrlm.train.ops.advantages.group_relative_advantages`. For per-token advantages ``[B, T]``
    normalised over masked tokens use :func:`mrlm.train.ops.stats.masked_whiten`.

    Args:
        rewards: ``[B]`` one reward per sequence, ``B >= 2``.
        eps: added to the std so that a batch of equal rewards gives 0, not NaN.

    Returns:
        ``[B]`` advantages with mean 0 and std close to 1 (0 everywhere if all rewards are equal).
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D [B], got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        raise ValueError(f"rewards must be a floating-point tensor, got {rewards.dtype}")
    if rewards.numel() < 2:
        raise ValueError(f"batch normalisation needs at least 2 rewards, got {rewards.numel()}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    return (rewards - rewards.mean()) / (rewards.std() + eps)


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    *,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised Advantage Estimation over the model's tokens (Schulman et al. 2016, section 3).

    The steps of the MDP are the masked positions of a row, in order; unmasked positions
    (prompt, environment replies and chat template between turns, padding) are skipped, so a
    multi-turn row with several separated spans of generated tokens is one episode. For step ``t``
    with next step ``t'`` (the next masked position of the same row; none after the last)::

        delta_t = r_t + gamma * V(t') - V(t)        (V(t') = 0 after the last step)
        A_t     = delta_t + gamma * lam * A_t'       (A_t' = 0 after the last step)
                = sum_{l >= 0} (gamma * lam)^l delta_{t+l}
        R_t     = A_t + V(t)                         (the critic's regression target)

    ``lam = 0`` gives the one-step TD error; ``gamma = lam = 1`` gives the sum of the future rewards
    minus ``V(t)``.

    Rewards must sit on masked positions (e.g. a turn's reward on its last generated token): a
    nonzero reward where ``mask`` is 0 raises ``ValueError`` rather than being silently dropped.
    Values where ``mask`` is 0 are ignored (they may be anything, even NaN). The outputs carry no
    gradient: ``rewards`` and ``values`` are detached.

    Args:
        rewards: ``[B, T]`` per-token rewards, 0 where ``mask`` is 0.
        values: ``[B, T]`` critic values ``V(t)``.
        mask: ``[B, T]`` 1 (or True) on the model's own tokens, 0 elsewhere.
        gamma: discount, in ``[0, 1]``.
        lam: GAE's lambda, in ``[0, 1]``.

    Returns:
        ``(advantages, returns)``, both ``[B, T]`` and 0 where ``mask`` is 0. A row without masked
        tokens is all 0; ``T = 0`` gives ``[B, 0]`` tensors.
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be 2-D [B, T], got shape {tuple(rewards.shape)}")
    if values.shape != rewards.shape or mask.shape != rewards.shape:
        raise ValueError(
            "rewards, values and mask must have the same [B, T] shape, got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)} and {tuple(mask.shape)}"
        )
    if not (rewards.is_floating_point() and values.is_floating_point()):
        raise ValueError(f"rewards and values must be floating point, got {rewards.dtype} and {values.dtype}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    active = mask != 0
    if mask.dtype != torch.bool and not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
    if bool((rewards[~active] != 0).any()):
        raise ValueError(
            "rewards must be 0 where mask is 0: put each turn's reward on one of its generated tokens "
            "(usually the last)"
        )

    dtype = torch.promote_types(rewards.dtype, values.dtype)
    rewards = rewards.detach().to(dtype)
    values = values.detach().to(dtype)
    batch, length = rewards.shape
    if length == 0:
        empty = rewards.new_zeros(batch, 0)
        return empty, empty.clone()

    zero = rewards.new_zeros(batch)
    next_value = zero  # V at the next masked position of each row, 0 after the last
    next_adv = zero  # A at the next masked position of each row, 0 after the last
    columns: list[torch.Tensor] = []
    for t in reversed(range(length)):
        here = active[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv_t = delta + gamma * lam * next_adv
        columns.append(torch.where(here, adv_t, zero))
        next_value = torch.where(here, values[:, t], next_value)
        next_adv = torch.where(here, adv_t, next_adv)
    advantages = torch.stack(columns[::-1], dim=1)
    returns = torch.where(active, advantages + values, torch.zeros_like(advantages))
    return advantages, returns
