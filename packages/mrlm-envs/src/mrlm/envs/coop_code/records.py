"""Cooperative tasks from records: MRLM's parts records, or HumanEval, CoopHumanEval and MBPP records.

A parts record, the format of the built-in problems (``mrlm/envs/coop_code/data/problems.jsonl``
in the package), gives the split itself: ``task_id``, ``parts`` and ``tests``, optionally
``description`` (the whole task in prose) and ``context`` (code before the parts: imports, given
functions). Each part has a ``name`` and optionally a ``stub`` (signature and docstring at column 0),
a ``description``, ``uses`` (the other parts it must call) and a ``canonical_solution`` (the code that
completes the stub). The last part is the entry point; each item of ``tests`` is one test of it, as
in :mod:`mrlm.envs.code.native`.

HumanEval, CoopHumanEval and MBPP records name one function, the entry point, and hold no split into
parts. The split is the one of cooperative HumanEval setups: one agent writes a helper function of a
fixed name (``aux`` by default) whose signature it chooses, and the other writes the entry point,
told that it must call the helper. The records are read as :func:`mrlm.envs.code.load_tasks` reads
them, so their tests run exactly as in ``mrlm/Code-v0`` (HumanEval's ``check`` split into one test
per assert, MBPP's asserts). CoopHumanEval records have HumanEval's fields without
``canonical_solution``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mrlm.envs.code.mbpp import optional_text
from mrlm.envs.code.native import counted_steps
from mrlm.envs.code.records import TaskSource, check_unique, read_records, record_task
from mrlm.envs.code.tasks import CodeTask, definition_pattern
from mrlm.envs.coop_code.tasks import CoopTask, Part


def load_coop_tasks(source: TaskSource, *, helper_name: str = "aux") -> tuple[CoopTask, ...]:
    """Tasks from records (a JSONL path, a list of dicts or a Dataset): parts records as they are,
    the others split in two parts (helper, entry point).

    Raises:
        ValueError: a record is in no known format or is inconsistent (naming it), task ids repeat,
            there are no records, or ``helper_name`` is not a Python name.
    """
    if not helper_name.isidentifier():
        raise ValueError(f"helper_name must be a Python name, got {helper_name!r}")
    tasks = tuple(
        parts_task(record, f"record {index}")
        if isinstance(record, Mapping) and "parts" in record
        else split_task(record_task(record, index), helper_name)
        for index, record in enumerate(read_records(source))
    )
    check_unique(tuple(task.tests for task in tasks))
    return tasks


def parts_task(record: Mapping[str, Any], where: str) -> CoopTask:
    """The task of one parts record; ``where`` names it in error messages."""
    task_id, parts = record.get("task_id"), record.get("parts")
    if task_id is None:
        raise ValueError(f"{where}: a parts record needs a task_id")
    if isinstance(parts, str) or not isinstance(parts, Sequence) or len(parts) < 2:
        raise ValueError(f"{where}: 'parts' must be a list of at least two part records")
    description, context = (optional_text(record, name, where) for name in ("description", "context"))
    read = [_part(part, f"{where}, part {number}") for number, part in enumerate(parts)]
    entry, _ = read[-1]
    tests = CodeTask(
        task_id=str(task_id),
        entry_point=entry.name,
        description=description,
        prompt_code=entry.stub,
        test_setup=context,
        steps=counted_steps(record.get("tests"), where),
        source="mrlm",
    )
    solutions = tuple(solution for _, solution in read if solution is not None)
    return CoopTask(
        task_id=str(task_id),
        description=description,
        parts=tuple(part for part, _ in read),
        tests=tests,
        context=context,
        solution=solutions if len(solutions) == len(read) else None,
        source="mrlm",
    )


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


def _part(record: object, where: str) -> tuple[Part, str | None]:
    """A part and its reference code (the stub completed), None when the record has none."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a mapping of fields, got {type(record).__name__}")
    name = record.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{where}: 'name' must be a Python name, got {name!r}")
    stub, description = (optional_text(record, field, where) for field in ("stub", "description"))
    if stub and not definition_pattern(name).search(stub):
        raise ValueError(f"{where}: the stub does not define {name} at column 0")
    uses = record.get("uses") or []
    if not isinstance(uses, (list, tuple)) or not all(isinstance(used, str) for used in uses):
        raise ValueError(f"{where}: 'uses' must be a list of part names")
    completion = optional_text(record, "canonical_solution", where)  # "" when there is none
    solution = stub + completion if record.get("canonical_solution") is not None else None
    return Part(name, stub=stub, description=description, uses=tuple(uses)), solution
