"""Cooperative tasks from HumanEval, CoopHumanEval and MBPP records.

These records name one function, the entry point, and hold no split into parts. The split is the
one of cooperative HumanEval setups: one agent writes a helper function of a fixed name (``aux`` by
default) whose signature it chooses, and the other writes the entry point, told that it must call
the helper. The records are read by :func:`mrlm.envs.code.load_tasks`, so their tests run exactly as
in ``mrlm/Code-v0`` (HumanEval's ``check`` split into one test per assert, MBPP's asserts).
CoopHumanEval records have HumanEval's fields without ``canonical_solution``.
"""

from __future__ import annotations

from mrlm.envs.code.records import TaskSource, load_tasks
from mrlm.envs.code.tasks import CodeTask, definition_pattern
from mrlm.envs.coop_code.tasks import CoopTask, Part


def load_coop_tasks(source: TaskSource, *, helper_name: str = "aux") -> tuple[CoopTask, ...]:
    """Two-part tasks (helper, entry point) from records: a JSONL path, a list of dicts or a Dataset.

    Raises:
        ValueError: a record is in no known format, or ``helper_name`` is not a Python name.
    """
    if not helper_name.isidentifier():
        raise ValueError(f"helper_name must be a Python name, got {helper_name!r}")
    return tuple(split_task(task, helper_name) for task in load_tasks(source))


def split_task(task: CodeTask, helper_name: str = "aux") -> CoopTask:
    """``task`` as a helper part and an entry-point part that must use it.

    The helper is named ``helper_name``, or ``helper_name_2``, ... when the task's code already uses
    that name.
    """
    name = _free_name(helper_name, task)
    entry = task.entry_point
    context = task.context if task.prompt_code.strip() else ""
    helper = Part(
        name,
        description=(
            f"Write a helper function named `{name}` that does a useful piece of the work, with the "
            f"parameters you find best and a docstring saying what they are. Your teammate writes "
            f"`{entry}` and will call `{name}`; do not write `{entry}` yourself."
        ),
    )
    main = Part(
        entry,
        stub=task.prompt_code[len(context) :],
        description=(
            f"Write the function `{entry}`. It must call the helper function `{name}`, which your "
            f"teammate writes, and use what it returns; do not define `{name}` yourself."
        ),
        uses=(name,),
    )
    source = "coophumaneval" if task.task_id.lower().startswith("coophumaneval") else task.source
    return CoopTask(
        task_id=task.task_id,
        description=task.description,
        parts=(helper, main),
        tests=task,
        context=context,
        source=source,
    )


def _free_name(base: str, task: CodeTask) -> str:
    taken = task.prompt_code + "\n" + task.test_setup
    candidate, number = base, 1
    while candidate == task.entry_point or definition_pattern(candidate).search(taken):
        number += 1
        candidate = f"{base}_{number}"
    return candidate
