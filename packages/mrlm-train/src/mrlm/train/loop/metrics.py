"""The metrics file: one JSON object per line, ``{"step": ..., "time": ..., **metrics}``.

``time`` is the Unix time of the call. The file is appended to and flushed on every call, so it is
complete up to the last logged step when a run dies, and it stays readable by anything that reads
JSON lines (non-finite values are written as ``NaN`` / ``Infinity``, which Python's json reads).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from mrlm.train.loop.fsio import replace_text

METRICS_FILE = "metrics.jsonl"


def to_float(value: Any) -> float:
    """A metric as a Python float (tensors and numpy scalars included)."""
    item = getattr(value, "item", None)
    return float(item() if callable(item) else value)


class MetricsLog:
    """Appends metric records to a JSONL file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def write(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        """Append one record and return it."""
        record: dict[str, Any] = {"step": step, "time": time.time()}
        record.update({key: to_float(value) for key, value in metrics.items()})
        if self._handle is None:
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the run)
        self._handle.write(json.dumps(record) + "\n")
        self._handle.flush()
        return record

    def truncate_after(self, step: int) -> None:
        """Drop records of steps after ``step``: on resume they belong to a future that was lost."""
        self.close()
        if not self.path.exists():
            return
        kept = [line for line in self.path.read_text(encoding="utf-8").splitlines() if _step_of(line) <= step]
        replace_text(self.path, "".join(line + "\n" for line in kept))

    def close(self) -> None:
        """Close the file (a later write reopens it)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """All records of a metrics file; for a step logged twice, the last record wins, in step order.

    A record is a JSON object whose ``step`` is a finite number. Its values are as read, NaN and
    infinities included (runs log them), but for an integer no float holds: it reads as an infinity,
    as a float literal too large does (``1e400``).

    A last line without its newline that is no record was torn by a run that died while writing it,
    and is left out (as resuming drops it). Any other line that is no record raises ValueError
    naming the file and the line, as does a file that is not UTF-8.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}), so not a metrics file") from None
    lines = text.splitlines()
    by_step: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = _loads(line)
            by_step[int(record["step"])] = record  # inf: OverflowError, nan: ValueError
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as error:
            if number == len(lines) and not text.endswith("\n"):
                break  # torn
            raise ValueError(f"{path}:{number}: not a metrics record ({type(error).__name__})") from None
    return [by_step[step] for step in sorted(by_step)]


def _step_of(line: str) -> float:
    """The step of a record line; a torn last line (the process died mid-write) counts as infinitely late."""
    try:
        return float(_loads(line)["step"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return float("inf")


def _loads(line: str) -> Any:
    """``line`` parsed as JSON, integers beyond a float read as infinities (see :func:`read_metrics`).

    Raises:
        ValueError: not JSON.
        RecursionError: JSON nested too deeply for the parser.
    """
    return json.loads(line, parse_int=_json_int)


def _json_int(text: str) -> int | float:
    """A JSON integer: as an int when a float holds it (plots draw floats), else as an infinity."""
    try:
        value = int(text)
        float(value)  # OverflowError beyond the largest float
    except (OverflowError, ValueError):  # ValueError: more digits than int() reads
        return -math.inf if text.startswith("-") else math.inf
    return value
