"""Trajectories as padded tensors, the input of the losses in :mod:`mrlm.train.ops`.

:func:`collate` pads ``B`` trajectories to ``T`` tokens. Every field of a :class:`RolloutBatch` is
indexed by row first, tensors and lists alike, so :meth:`RolloutBatch.select` (or indexing each
field with a slice) cuts a consistent micro-batch. Rows of different policies hold ids of different
tokenizers: collate each policy's rows apart (:func:`~mrlm.train.rollout.trajectory.by_policy`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from mrlm.train.rollout.errors import RewardOverflowError
from mrlm.train.rollout.trajectory import Trajectory

_FLOAT32_MAX = torch.finfo(torch.float32).max

#: Rows to keep: a slice, integer indices or a boolean mask (a tensor or a sequence of ints).
Rows = slice | torch.Tensor | Sequence[int]


@dataclass(frozen=True)
class RolloutBatch:
    """``B`` trajectories right-padded to the longest, ``T`` tokens.

    The fields after ``groups`` have defaults, so a batch built with the first six alone still
    works; :func:`collate` fills them all.
    """

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
    token_rewards: torch.Tensor | None = None
    """``[B, T]`` float32: each turn's reward on the last token of that turn's reply (on the token
    before an empty reply), 0 elsewhere; a row sums to its total reward."""
    ref_logprobs: torch.Tensor | None = None
    """``[B, T]`` float32: log-probs under the reference model. :func:`collate` leaves NaN (not yet
    computed) for the trainer to fill with :meth:`replace`: a loss using them unfilled turns NaN."""
    values: torch.Tensor | None = None
    """``[B, T]`` float32: value estimates of a critic; NaN from :func:`collate`, as ``ref_logprobs``."""
    episodes: torch.Tensor | None = None
    """``[B]`` long: the joint episode of each row (rows of one multi-agent episode share it); -1 unknown."""
    turn_spans: list[list[tuple[int, int]]] = field(default_factory=list)
    """Per row, the ``(start, end)`` token range of each reply."""
    agents: list[str | None] = field(default_factory=list)
    """Per row, the agent (None in single-agent envs)."""
    policies: list[str] = field(default_factory=list)
    """Per row, the name of the policy that wrote it."""

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, rows: Rows) -> RolloutBatch:
        """The batch of ``rows`` only, every field cut the same way (order of ``rows`` kept)."""
        indices = _indices(rows, len(self))
        picked: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is None:
                picked[item.name] = None
            elif isinstance(value, torch.Tensor):
                picked[item.name] = (
                    value[rows] if isinstance(rows, slice) else value[indices.to(value.device)]
                )
            elif not value:  # a list field of a batch built without it
                picked[item.name] = []
            else:
                picked[item.name] = (
                    value[rows] if isinstance(rows, slice) else [value[i] for i in indices.tolist()]
                )
        return RolloutBatch(**picked)

    def replace(self, **changes: Any) -> RolloutBatch:
        """A copy with some fields changed (``ref_logprobs=...`` once computed); each must have ``B`` rows."""
        for name, value in changes.items():
            if value is not None and len(value) != len(self):
                raise ValueError(f"{name} has {len(value)} rows; the batch has {len(self)}")
        return dataclasses.replace(self, **changes)


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
    episodes = torch.tensor([-1 if t.episode is None else t.episode for t in trajectories], dtype=torch.long)
    unknown = torch.full((batch, width), math.nan, dtype=torch.float32)
    return RolloutBatch(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        mask=mask.to(device),
        old_logprobs=old_logprobs.to(device),
        rewards=rewards.to(device),
        groups=groups.to(device),
        token_rewards=token_reward_tensor(trajectories, width).to(device),
        ref_logprobs=unknown.to(device),
        values=unknown.clone().to(device),
        episodes=episodes.to(device),
        turn_spans=[list(t.turn_spans) for t in trajectories],
        agents=[t.agent for t in trajectories],
        policies=[t.policy for t in trajectories],
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


def token_reward_tensor(trajectories: Sequence[Trajectory], width: int) -> torch.Tensor:
    """``[B, width]`` float32: each turn's reward on the last token of its reply (see RolloutBatch)."""
    out = torch.zeros((len(trajectories), width), dtype=torch.float32)
    for row, trajectory in enumerate(trajectories):
        if not trajectory.token_ids or not trajectory.turn_rewards:
            continue
        spans, rewards = trajectory.turn_spans, trajectory.turn_rewards
        if len(spans) == len(rewards):
            for (start, end), reward in zip(spans, rewards, strict=True):
                out[row, max(end - 1 if end > start else start - 1, 0)] += reward
        else:
            # Spans that do not match the turns (an old record with an empty reply): the whole
            # reward on the last reply's last token, so that the row still sums to its reward.
            last = spans[-1][1] - 1 if spans else len(trajectory.token_ids) - 1
            out[row, max(last, 0)] += trajectory.total_reward
    return out


def _indices(rows: Rows, size: int) -> torch.Tensor:
    if isinstance(rows, slice):
        return torch.arange(size)[rows]
    index = rows if isinstance(rows, torch.Tensor) else torch.tensor(list(rows), dtype=torch.long)
    index = index.cpu()
    if index.dtype == torch.bool:
        if index.shape != (size,):
            raise IndexError(f"a boolean row mask needs {size} entries, got {tuple(index.shape)}")
        return index.nonzero().flatten()
    return index.long().flatten()
