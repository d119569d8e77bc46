"""Trajectories as padded tensors, the input of the losses in :mod:`mrlm.train.ops`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mrlm.train.rollout.errors import RewardOverflowError
from mrlm.train.rollout.trajectory import Trajectory

_FLOAT32_MAX = torch.finfo(torch.float32).max


@dataclass(frozen=True)
class RolloutBatch:
    """``B`` trajectories right-padded to the longest, ``T`` tokens."""

    input_ids: torch.Tensor
    """``[B, T]`` long: token ids, padding after each sequence."""
    attention_mask: torch.Tensor
    """``[B, T]`` long: 1 on real tokens, 0 on padding."""
    mask: torch.Tensor
    """``[B, T]`` float: 1 on generated tokens (the ones the losses train), 0 elsewhere."""
    old_logprobs: torch.Tensor
    """``[B, T]`` float32: log-probs recorded at sampling time, 0 where mask is 0."""
    rewards: torch.Tensor
    """``[B]`` float32: each trajectory's total reward."""
    groups: torch.Tensor
    """``[B]`` long: each trajectory's group id."""


def collate(
    trajectories: Sequence[Trajectory], pad_token_id: int, device: torch.device | str | None = None
) -> RolloutBatch:
    """Right-pad ``trajectories`` into a :class:`RolloutBatch` (on ``device`` when given)."""
    if not trajectories:
        raise ValueError("collate needs at least one trajectory")
    batch, width = len(trajectories), max(len(t.token_ids) for t in trajectories)
    input_ids = torch.full((batch, width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.float32)
    old_logprobs = torch.zeros((batch, width), dtype=torch.float32)
    for row, trajectory in enumerate(trajectories):
        n = len(trajectory.token_ids)
        input_ids[row, :n] = torch.tensor(trajectory.token_ids, dtype=torch.long)
        attention_mask[row, :n] = 1
        mask[row, :n] = torch.tensor(trajectory.mask, dtype=torch.float32)
        old_logprobs[row, :n] = torch.tensor(trajectory.logprobs, dtype=torch.float32)
    rewards = reward_tensor(trajectories)
    groups = torch.tensor([t.group for t in trajectories], dtype=torch.long)
    return RolloutBatch(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        mask=mask.to(device),
        old_logprobs=old_logprobs.to(device),
        rewards=rewards.to(device),
        groups=groups.to(device),
    )


def reward_tensor(trajectories: Sequence[Trajectory]) -> torch.Tensor:
    """``[B]`` float32: each trajectory's total reward.

    Raises:
        RewardOverflowError: a finite total reward beyond float32's range, which would silently
            become infinite (NaN and infinite rewards pass through: the trainer names them as such).
    """
    for trajectory in trajectories:
        total = trajectory.total_reward
        if math.isfinite(total) and abs(total) > _FLOAT32_MAX:
            raise RewardOverflowError(
                f"env {trajectory.env_id!r} paid a total reward of {total:g} (seed {trajectory.seed}), "
                f"which overflows float32 (largest finite value {_FLOAT32_MAX:g}), the precision "
                "rewards are trained in; scale the env's rewards down"
            )
    return torch.tensor([t.total_reward for t in trajectories], dtype=torch.float32)
