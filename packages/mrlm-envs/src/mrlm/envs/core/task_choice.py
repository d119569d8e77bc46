"""Which task a reset serves: the one rule every env that draws from a collection of tasks follows.

In order: the task ``options["task_id"]`` names, else the one at ``options["index"]``, else task
``seed % n`` when ``reset`` was given a seed (so seeds ``0 .. n-1`` visit every task once, and one
seed always serves one task), else a draw from the env's seeded generator (an unseeded ``reset``
continues the stream of the last seeded one). Envs that generate their tasks (Math without records,
ToolUse, TeamSum) draw them from the generator instead: they have no collection to index.
"""

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
    *,
    seed: int | None = None,
) -> TaskT:
    """The task of a new episode, by the rule above; ``rng`` is used only when nothing else decides.

    Args:
        tasks: the collection (not empty).
        positions_by_id: ``task_id -> position`` for ``options["task_id"]``; empty when tasks have no ids.
        rng: the env's generator (``np_random``).
        options: the ``options`` of ``reset``; keys other than ``task_id`` and ``index`` are ignored
            (PettingZoo's ``api_test`` resets with options of its own).
        seed: the seed given to ``reset``, or None.

    Raises:
        ValueError: an id that is not a string or is unknown, or an index that is not an int in range
            (a bool is refused, though it is an int to Python).
    """
    if "task_id" in options:
        task_id = options["task_id"]
        # Ids are strings; anything else is refused before the lookup, which would raise TypeError
        # for an unhashable value (a list from JSON, say).
        if not isinstance(task_id, str):
            raise ValueError(f"options['task_id'] must be a str, got {type(task_id).__name__} {task_id!r}")
        if task_id not in positions_by_id:
            raise ValueError(f"unknown task_id {task_id!r}; this env has {len(tasks)} tasks")
        return tasks[positions_by_id[task_id]]
    if "index" in options:
        index = options["index"]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < len(tasks):
            raise ValueError(f"options['index'] must be an int in [0, {len(tasks)}), got {index!r}")
        return tasks[int(index)]
    if seed is not None:
        return tasks[int(seed) % len(tasks)]
    return tasks[int(rng.integers(len(tasks)))]
