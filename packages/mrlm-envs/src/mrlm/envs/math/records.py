"""Tasks from dataset records in the GSM8K or the MATH format.

* GSM8K: ``question`` and ``answer``; the answer is a worked solution (with ``<<48/2=24>>`` calculator
  notes) whose last ``#### ...`` line holds the final answer (``#### 1,000`` becomes ``1000``).
* MATH: ``problem`` and ``solution``; the final answer is the content of the solution's last
  ``\\boxed{...}`` (nested braces allowed) unless the record has an ``answer`` field (as MATH-500 does).
  ``level`` (``"Level 3"`` or ``3``) and ``type`` (or ``subject``) are kept.

The format is detected per record, so one collection may mix both. Records come as a sequence or
iterable of dicts (a list, a Hugging Face ``datasets.Dataset``: anything iterable, or with ``__len__``
and ``__getitem__``, yielding dicts; ``datasets`` itself is never imported) or as the path of a JSONL
file. Nothing is downloaded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from mrlm.envs.core.records import record_rows
from mrlm.envs.math.answers import last_boxed
from mrlm.envs.math.tasks import LEVELS, MathTask

RecordFormat = Literal["gsm8k", "math"]

_GSM8K_FIELDS = ("question", "answer")
_MATH_FIELDS = ("problem", "solution")
_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")
_GROUPED_INT = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+")


def load_records(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]]) -> list[MathTask]:
    """Every record of ``source`` as a :class:`MathTask`, in order (``task.index`` is the position).

    Args:
        source: a JSONL path, or a sequence / iterable of dicts (a list, a ``datasets.Dataset``, ...).

    Raises:
        ValueError: a record in neither format (the message names its index and the missing fields),
            a record without a final answer, invalid JSON, or no records at all.
        TypeError: ``source`` is not a collection of records (a single dict, a ``DatasetDict``, ...).
    """
    rows = record_rows(source)
    if not rows:
        raise ValueError("no records: the collection is empty")
    return [record_task(row, index) for index, row in enumerate(rows)]


def detect_format(record: Mapping[str, Any], index: int = 0) -> RecordFormat:
    """``"gsm8k"`` or ``"math"``; ValueError naming ``index`` and the missing fields otherwise."""
    if not isinstance(record, Mapping):
        hint = " (for a pandas DataFrame, pass df.to_dict('records'))" if isinstance(record, str) else ""
        raise ValueError(f"record {index} is a {type(record).__name__}, not a dict{hint}")
    if all(field in record for field in _GSM8K_FIELDS):
        return "gsm8k"
    if "problem" in record and ("solution" in record or "answer" in record):
        return "math"
    missing_gsm8k = [field for field in _GSM8K_FIELDS if field not in record]
    missing_math = [field for field in _MATH_FIELDS if field not in record]
    raise ValueError(
        f"record {index} matches neither format: GSM8K needs {_listed(_GSM8K_FIELDS)} "
        f"(missing {_listed(missing_gsm8k)}), MATH needs {_listed(_MATH_FIELDS)} "
        f"(missing {_listed(missing_math)}); the record has {_listed(sorted(map(str, record)))}"
    )


def record_task(record: Mapping[str, Any], index: int) -> MathTask:
    """The task of one record (format detected); ValueError naming ``index`` when it is unusable."""
    kind = detect_format(record, index)
    if kind == "gsm8k":
        question = _text(record, "question", index, kind)
        worked = _text(record, "answer", index, kind)
        solution, marker, final = worked.rpartition("####")
        answer = final.strip().splitlines()[0].strip() if final.strip() else ""
        if not marker or not answer:
            raise ValueError(f"record {index} (GSM8K): the answer has no final '#### <answer>' line")
        answer = answer.strip("$ ").rstrip(".")
        if _GROUPED_INT.fullmatch(answer):
            answer = answer.replace(",", "")
        return MathTask(
            question,
            answer,
            "word_problem",
            None,
            source="gsm8k",
            index=index,
            solution=_CALCULATOR_NOTE.sub("", solution).strip(),
        )
    problem = _text(record, "problem", index, kind)
    solution_text = record.get("solution")
    worked_solution = solution_text if isinstance(solution_text, str) else None
    given = record.get("answer")
    if isinstance(given, str) and given.strip():
        answer = given.strip()
    else:
        boxed = last_boxed(worked_solution or "")
        if boxed is None or not boxed.strip():
            raise ValueError(f"record {index} (MATH): the solution has no \\boxed{{...}} answer")
        answer = boxed.strip()
    topic = record.get("type") or record.get("subject") or "math"
    return MathTask(
        problem,
        answer,
        str(topic),
        _level(record.get("level")),
        source="math",
        index=index,
        solution=worked_solution,
    )


def _text(record: Mapping[str, Any], field: str, index: int, kind: RecordFormat) -> str:
    value = record[field]
    if not isinstance(value, str) or not value.strip():
        label = "GSM8K" if kind == "gsm8k" else "MATH"
        raise ValueError(
            f"record {index} ({label}): field {field!r} must be a non-empty string, got {value!r:.60}"
        )
    return value


def _level(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value in LEVELS else None
    if isinstance(value, str):
        digits = re.search(r"[0-9]+", value)
        if digits and int(digits.group()) in LEVELS:
            return int(digits.group())
    return None


def _listed(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names) or "nothing"
