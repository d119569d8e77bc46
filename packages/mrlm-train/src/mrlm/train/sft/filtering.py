"""Keeping the trajectories worth imitating: rejection sampling by reward."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

from mrlm.train.sft.trajectories import TrajectoryRecord


def select_by_reward(
    records: Sequence[TrajectoryRecord],
    *,
    min_reward: float | None = None,
    top_fraction: float | None = None,
    indices: Sequence[int] | None = None,
) -> list[bool]:
    """Which trajectories to keep, one flag per record.

    A trajectory is kept when both hold (each filter is off when None):

    * ``reward >= min_reward``;
    * it ranks among the best ``ceil(top_fraction * n)`` of its group of ``n`` trajectories, by
      reward; ties go to the earlier record, so the selection is deterministic.

    The two are independent: the ranking is within the whole group, not among the trajectories
    that pass ``min_reward``.

    Args:
        indices: the record index of each entry, for error messages (defaults to positions).

    Raises:
        ValueError: ``top_fraction`` outside ``(0, 1]``, or a record without the reward or group
            a filter needs.
    """
    names = list(indices) if indices is not None else list(range(len(records)))
    keep = [True] * len(records)
    if min_reward is not None:
        for position, record in enumerate(records):
            keep[position] = _reward(record, names[position]) >= min_reward
    if top_fraction is not None:
        if not 0.0 < top_fraction <= 1.0:
            raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
        groups: dict[Hashable, list[int]] = defaultdict(list)
        for position, record in enumerate(records):
            if record.group is None:
                raise ValueError(f"record {names[position]} (trajectory): top_fraction needs its 'group'")
            groups[record.group].append(position)
        for members in groups.values():
            # sorted() is stable: among equal rewards the earlier record ranks first.
            ranked = sorted(members, key=lambda p: -_reward(records[p], names[p]))
            for position in ranked[math.ceil(top_fraction * len(members)) :]:
                keep[position] = False
    return keep


def _reward(record: TrajectoryRecord, index: int) -> float:
    if record.reward is None:
        raise ValueError(
            f"record {index} (trajectory): reward filtering needs 'turn_rewards' or 'total_reward'"
        )
    return record.reward
