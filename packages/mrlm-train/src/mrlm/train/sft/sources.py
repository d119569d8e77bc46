"""Where records come from: a list, a JSONL file, or anything iterable such as a Hugging Face dataset."""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mrlm.train.rollout.trajectory import Trajectory

Record = Mapping[str, Any] | Trajectory
"""One example before conversion: a dict of fields, or a trajectory."""

Source = str | os.PathLike[str] | Iterable[Record]
"""A JSONL path, or an iterable of records (a list of dicts, a ``datasets.Dataset``, trajectories)."""


def iter_records(source: Source) -> Iterator[Record]:
    """The records of ``source``, in order.

    A path is read as JSONL: one JSON object per non-blank line, UTF-8 with or without a byte order
    mark (Windows editors save one). Any other iterable is taken as is,
    so a ``datasets.Dataset`` (whose iteration yields one dict per row) works without this module
    importing ``datasets``.

    Raises:
        ValueError: a JSONL line is not valid JSON, or ``source`` is a mapping (a ``DatasetDict``,
            say, whose iteration would yield split names).
    """
    if isinstance(source, (str, os.PathLike)):
        yield from _read_jsonl(Path(source))
        return
    if isinstance(source, Mapping):
        raise ValueError(
            "the source is a mapping, not a sequence of records; pass one split of a DatasetDict "
            "(dataset['train']) or a list of records"
        )
    yield from source


def check_source(source: Source, error: type[ValueError] = ValueError) -> None:
    """Raise ``error`` when ``source`` is a path that names no readable file (nothing there, or a
    directory), so that a run refuses it before it loads a model; any other source passes."""
    if not isinstance(source, (str, os.PathLike)):
        return
    path = Path(source)
    if path.is_dir():
        raise error(f"{path} is a directory, not a JSONL file of records")
    if not path.exists():
        raise error(f"{path}: no such file")


def check_has_records(source: Source, error: type[ValueError] = ValueError) -> None:
    """Raise ``error`` when ``source`` is a regular file with no record (empty, or blank lines only),
    so that a run refuses it before it loads a model. Reads up to the first non-blank line; pipes and
    other sources pass untouched (reading would consume them)."""
    if not isinstance(source, (str, os.PathLike)) or not Path(source).is_file():
        return
    with Path(source).open("rb") as handle:
        if not any(line.removeprefix(codecs.BOM_UTF8).strip() for line in handle):
            raise error(f"{source} holds no records: nothing to train on")


def _read_jsonl(path: Path) -> Iterator[Record]:
    check_source(path)  # open() would raise IsADirectoryError or FileNotFoundError, naming no line
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            # A byte order mark (a file saved by a Windows editor, or two such files concatenated)
            # is never part of the JSON that follows it.
            mark = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
            try:
                line = raw[mark:].decode("utf-8")
            except UnicodeDecodeError as error:
                byte = mark + error.start
                raise ValueError(f"{path}:{line_number}: not UTF-8 text (byte {byte})") from None
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg})") from error
            except RecursionError:  # thousands of nested brackets: the decoder gives up
                raise ValueError(f"{path}:{line_number}: JSON nested too deeply") from None
