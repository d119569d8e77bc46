"""Credit in multi-agent episodes: which reward each agent's row is trained on, and its advantage.

Rows are one agent's side of one joint episode (see :mod:`mrlm.train.rollout`). Credit decides the
reward of a row; :func:`grouped_advantages` then compares each row with the other rows of its group
(the same agent's samples of the same task) through any baseline of :mod:`mrlm.train.ops.estimators`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch

from mrlm.train.ops.advantages import StdScaling

Credit = Literal["team", "agent"]

#: A baseline: ``estimator(rewards [G], G) -> advantages [G]`` for the ``G`` rows of one group.
Estimator = Callable[[torch.Tensor, int], torch.Tensor]


def team_rewards(rewards: torch.Tensor, episodes: torch.Tensor) -> torch.Tensor:
    """Each row's reward replaced by the mean reward of the rows of its joint episode.

    For the agents ``a`` of joint episode ``e`` with total rewards ``r_a``::

        R_e = (1/|e|) sum_{a in e} r_a      (every row of e is credited R_e)

    A cooperative team shares one reward whatever the env pays each member; in an env that pays
    every agent the team's reward, this changes nothing.

    Args:
        rewards: ``[B]`` each row's own total reward.
        episodes: ``[B]`` the joint episode of each row (rows of one episode share the id).

    Returns:
        ``[B]`` the team reward of each row's episode.
    """
    if rewards.dim() != 1 or episodes.shape != rewards.shape:
        raise ValueError(
            f"rewards and episodes must both be [B], got {tuple(rewards.shape)} and {tuple(episodes.shape)}"
        )
    _, index = torch.unique(episodes, return_inverse=True)
    count = int(index.max()) + 1 if index.numel() else 0
    sums = torch.zeros(count, dtype=rewards.dtype).index_add_(0, index, rewards)
    sizes = torch.zeros(count, dtype=rewards.dtype).index_add_(0, index, torch.ones_like(rewards))
    return (sums / sizes)[index]


def grouped_advantages(
    rewards: torch.Tensor,
    groups: torch.Tensor,
    estimator: Estimator,
    *,
    scale: StdScaling = "group",
    eps: float = 1e-4,
) -> torch.Tensor:
    """Advantages of rows compared within their groups, whatever the groups' sizes and order.

    For the rows ``i`` of one group with rewards ``r``, and ``b_i`` the estimator's baseline::

        A_i = (r_i - b_i) / (std(r) + eps)     scale="group" (std of the group's rewards)
        A_i = (r_i - b_i) / (std(R) + eps)     scale="batch" (std of every reward of the batch)
        A_i =  r_i - b_i                       scale="none"

    (std with Bessel's correction). With the group-mean baseline and ``scale="group"`` this is
    GRPO's advantage. A group of one row has nothing to compare with: its advantage is 0.

    Args:
        rewards: ``[B]`` rewards (already credited).
        groups: ``[B]`` group id of each row; a group's rows need not be contiguous.
        estimator: the baseline, one of :mod:`mrlm.train.ops.estimators`'s sequence estimators.
        scale: which std divides the advantages.
        eps: keeps a group of equal rewards at 0, not NaN.

    Returns:
        ``[B]`` advantages.
    """
    if rewards.dim() != 1 or groups.shape != rewards.shape:
        raise ValueError(
            f"rewards and groups must both be [B], got {tuple(rewards.shape)} and {tuple(groups.shape)}"
        )
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    advantages = torch.zeros_like(rewards)
    for group in torch.unique(groups):
        rows = (groups == group).nonzero(as_tuple=True)[0]
        if rows.numel() < 2:
            continue
        members = rewards[rows]
        adv = estimator(members, int(rows.numel()))
        if scale == "group":
            adv = adv / (members.std() + eps)
        advantages[rows] = adv
    if scale == "batch" and rewards.numel() > 1:
        advantages = advantages / (rewards.std() + eps)
    return advantages


def turn_advantages(
    turn_rewards: Sequence[Sequence[float]],
    groups: Sequence[int],
    estimator: Estimator,
    *,
    scale: StdScaling = "group",
    eps: float = 1e-4,
) -> list[list[float]]:
    """Advantages per turn, grouped by agent and turn (AT-GRPO, as in PettingLLMs).

    Turn ``k`` of a row is compared only with turn ``k`` of the other rows of its group (the same
    agent's samples of the same task), through :func:`grouped_advantages`::

        A_{i,k} = (r_{i,k} - b_{i,k}) / (std_k(r) + eps)

    where ``r_{i,k}`` is the reward of row ``i``'s ``k``-th reply and the baseline and std are over
    the group's rows that have a ``k``-th reply. A turn no other row of the group reached gets 0.

    Args:
        turn_rewards: each row's reward of each of its replies.
        groups: each row's group id.

    Returns:
        Each row's advantage of each of its replies.
    """
    if len(turn_rewards) != len(groups):
        raise ValueError(f"{len(turn_rewards)} rows of turn rewards but {len(groups)} group ids")
    flat = [reward for rewards in turn_rewards for reward in rewards]
    keys = [
        (group, k) for rewards, group in zip(turn_rewards, groups, strict=True) for k in range(len(rewards))
    ]
    ids = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    advantages = grouped_advantages(
        torch.tensor(flat, dtype=torch.float32),
        torch.tensor([ids[key] for key in keys], dtype=torch.long),
        estimator,
        scale=scale,
        eps=eps,
    ).tolist()
    return split_like(advantages, turn_rewards)


def split_like(flat: Sequence[float], shape: Sequence[Sequence[float]]) -> list[list[float]]:
    """``flat`` cut into lists as long as those of ``shape`` (the inverse of flattening ``shape``)."""
    out: list[list[float]] = []
    start = 0
    for part in shape:
        out.append(list(flat[start : start + len(part)]))
        start += len(part)
    return out


def token_advantages(
    turn_values: Sequence[Sequence[float]], turn_spans: Sequence[Sequence[tuple[int, int]]], width: int
) -> torch.Tensor:
    """``[B, width]``: each turn's value on the tokens of that turn's reply (``[start, end)``), 0 elsewhere."""
    out = torch.zeros(len(turn_values), width)
    for row, (values, spans) in enumerate(zip(turn_values, turn_spans, strict=True)):
        if len(values) != len(spans):
            raise ValueError(f"row {row} has {len(values)} turn values but {len(spans)} reply spans")
        for value, (start, end) in zip(values, spans, strict=True):
            out[row, start:end] = value
    return out
