"""Load coding tasks from records in the HumanEval, MBPP or MRLM format.

Records come as a list of dicts, a JSONL file, or a Hugging Face ``Dataset`` (or anything with the
same shape: an iterable of mappings). ``datasets`` is never imported here. The format is detected per
record, so a source may mix them. The MRLM format (:mod:`mrlm.envs.code.native`) is that of the
built-in problems, which ship as ``mrlm/envs/code/data/problems.jsonl`` and load through this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mrlm.envs.code import humaneval, mbpp, native
from mrlm.envs.code.tasks import CodeTask

#: What :func:`load_tasks` accepts.
TaskSource = str | os.PathLike[str] | Iterable[Mapping[str, Any]]

_FORMATS = {
    "HumanEval": humaneval.FIELDS,
    "MBPP": mbpp.FULL_FIELDS,
    "MBPP (sanitized)": mbpp.SANITIZED_FIELDS,
    "MRLM": native.FIELDS,
}


def load_tasks(source: TaskSource) -> tuple[CodeTask, ...]:
    """Tasks from ``source``: a JSONL path, a list of record dicts, or a Dataset-like iterable.

    Raises:
        ValueError: a record is in no known format (naming its index and the missing fields), a field
            has the wrong type, a test does not compile, task ids repeat, or there are no records.
    """
    tasks = tuple(record_task(record, index) for index, record in enumerate(read_records(source)))
    check_unique(tasks)
    return tasks


def check_unique(tasks: tuple[CodeTask, ...]) -> None:
    """Raise ValueError when there are no tasks or two share a task_id."""
    if not tasks:
        raise ValueError("no task records were given")
    seen: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.task_id in seen:
            raise ValueError(f"records {seen[task.task_id]} and {index} share the task_id {task.task_id!r}")
        seen[task.task_id] = index


def detect_format(record: Mapping[str, Any]) -> str | None:
    """``"HumanEval"``, ``"MBPP"``, ``"MBPP (sanitized)"``, ``"MRLM"``, or None when no format's fields
    are all there."""
    for name, fields in _FORMATS.items():
        if all(field in record and record[field] is not None for field in fields):
            return name
    return None


def record_task(record: object, index: int) -> CodeTask:
    """The task of one record; ``index`` is its position, used in error messages."""
    where = f"record {index}"
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a mapping of fields, got {type(record).__name__}")
    kind = detect_format(record)
    if kind == "HumanEval":
        return humaneval.humaneval_task(record, where)
    if kind == "MRLM":
        return native.native_task(record, where)
    if kind is not None:
        return mbpp.mbpp_task(record, where)
    missing = {
        name: [field for field in fields if field not in record or record[field] is None]
        for name, fields in _FORMATS.items()
    }
    closest = min(missing, key=lambda name: len(missing[name]))
    raise ValueError(
        f"{where} is in no known format; closest is {closest}, which lacks "
        f"{', '.join(missing[closest])} (HumanEval needs {', '.join(humaneval.FIELDS)}; MBPP needs "
        f"{', '.join(mbpp.FULL_FIELDS)}, or prompt in place of text when sanitized; MRLM needs "
        f"{', '.join(native.FIELDS)})"
    )


def read_records(source: TaskSource) -> Iterable[object]:
    """The records of ``source``, not yet checked; ValueError for a mapping or a line that is not JSON."""
    if isinstance(source, (str, os.PathLike)):
        return _read_jsonl(Path(source))
    if isinstance(source, Mapping):
        splits = ", ".join(repr(key) for key in list(source)[:5])
        raise ValueError(f"expected records, got a mapping (a DatasetDict?); pick a split, one of {splits}")
    if not isinstance(source, Iterable):
        raise ValueError(
            f"expected a JSONL path, a list of records or a Dataset, got {type(source).__name__}"
        )
    # A Dataset yields one dict per row; copy so later changes to the source do not leak in.
    return [dict(record) if isinstance(record, Mapping) else record for record in source]


def _read_jsonl(path: Path) -> list[object]:
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not valid JSON: {error}") from None
    return records
