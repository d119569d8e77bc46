"""Which task a reset serves: one asked for by id or position in ``options``, else a seeded draw."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

TaskT = TypeVar("TaskT")


def choose_task(
    tasks: Sequence[TaskT],
    positions_by_id: Mapping[str, int],
    rng: np.random.Generator,
    options: Mapping[str, Any],
) -> TaskT:
    """The task ``options["task_id"]`` names, else the one at ``options["index"]``, else a draw from ``rng``.

    Raises ValueError for an unknown id or an index that is not an int in range (a bool is refused,
    though it is an int to Python).
    """
    if "task_id" in options:
        task_id = options["task_id"]
        if task_id not in positions_by_id:
            raise ValueError(f"unknown task_id {task_id!r}; this env has {len(tasks)} tasks")
        return tasks[positions_by_id[task_id]]
    if "index" in options:
        index = options["index"]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < len(tasks):
            raise ValueError(f"index must be an int in [0, {len(tasks)}), got {index!r}")
        return tasks[int(index)]
    return tasks[int(rng.integers(len(tasks)))]
