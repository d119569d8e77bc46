"""Advantages computed from rewards alone (no critic)."""

from __future__ import annotations

from typing import Literal

import torch

StdScaling = Literal["group", "batch", "none"]


def group_relative_advantages(
    rewards: torch.Tensor, group_size: int, *, scale: StdScaling = "group", eps: float = 1e-4
) -> torch.Tensor:
    """GRPO advantages: each reward minus its group's mean, optionally divided by a standard deviation.

    Shao et al. 2024 (DeepSeekMath, eq. 3 with outcome supervision): for the ``G`` answers to one
    prompt with rewards ``r_1..r_G``::

        A_i = (r_i - mean(r)) / (std(r) + eps)

    ``scale="group"`` divides by the group's std (the paper), ``"batch"`` by the std of the whole
    batch, ``"none"`` not at all (Liu et al. 2025, Dr. GRPO, which removes the difficulty bias the std
    introduces). Standard deviations use Bessel's correction (``n - 1``).

    Args:
        rewards: ``[B]``, groups laid out contiguously: ``B = n_groups * group_size``.
        group_size: answers per prompt, ``G >= 2``.
        scale: which standard deviation divides the centred rewards.
        eps: added to the std so that a group of equal rewards gives 0, not NaN.

    Returns:
        ``[B]`` advantages, same dtype as ``rewards``.
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D [B], got shape {tuple(rewards.shape)}")
    if group_size < 2 or rewards.numel() % group_size != 0:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size} (need >= 2)")
    grouped = rewards.view(-1, group_size)  # [n_groups, G]
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if scale == "group":
        centred = centred / (grouped.std(dim=1, keepdim=True) + eps)
    elif scale == "batch":
        centred = centred / (rewards.std() + eps)
    elif scale != "none":
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    return centred.reshape(-1)


def groups_with_signal(rewards: torch.Tensor, group_size: int, *, atol: float = 1e-6) -> torch.Tensor:
    """``[n_groups]`` bool: True where the group's rewards are not all equal.

    A group whose answers all score the same has zero advantage everywhere and teaches nothing; dynamic
    sampling (Yu et al. 2025, DAPO, section 3.2) drops such groups and samples more.
    """
    grouped = rewards.view(-1, group_size)
    return (grouped.max(dim=1).values - grouped.min(dim=1).values) > atol
