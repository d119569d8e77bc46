"""Task records from where users keep them: a JSONL path, a list of dicts, or a Dataset-like object."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def record_rows(source: object) -> list[Any]:
    """The records of ``source`` as a list, unvalidated (each env checks its own fields).

    ``source`` is a JSONL path (blank lines skipped), any iterable of records, or an object with
    ``__len__`` and ``__getitem__`` (a Hugging Face ``Dataset``; ``datasets`` is never imported).
    Raises ValueError for a line that is not JSON (naming the file and line) and TypeError for one
    mapping (a ``DatasetDict``: the message names its splits) or bytes.
    """
    if isinstance(source, (str, os.PathLike)):
        return read_jsonl(Path(source))
    if isinstance(source, Mapping):
        keys = ", ".join(sorted(map(str, source))[:5])
        raise TypeError(
            f"records must be a collection of records, not one mapping (keys {keys}); "
            "for a DatasetDict pass one split, e.g. ds['train']"
        )
    if isinstance(source, (bytes, bytearray)):
        raise TypeError("records must be a JSONL path or a collection of dicts, not bytes")
    if hasattr(source, "__iter__"):
        return list(source)
    if hasattr(source, "__len__") and hasattr(source, "__getitem__"):
        return [source[i] for i in range(len(source))]
    raise TypeError(f"records must be a JSONL path or a collection of dicts, got {type(source).__name__}")


def read_jsonl(path: Path) -> list[Any]:
    """One JSON value per non-blank line of ``path``; ValueError naming the line that is not JSON."""
    rows = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg})") from None
    return rows
