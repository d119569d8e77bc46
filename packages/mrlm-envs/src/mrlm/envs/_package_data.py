"""Files that ship inside the package: the built-in data sets, as JSONL beside the code that reads them."""

from __future__ import annotations

from contextlib import AbstractContextManager
from importlib.resources import as_file, files
from pathlib import Path


def data_file(package: str, name: str) -> AbstractContextManager[Path]:
    """A context that gives a path to the file ``name`` of ``package``'s ``data/`` folder.

    The record readers take paths, as they do for users' files, so a zipped install extracts the file
    for the length of the context; an ordinary install gives the packaged file itself (read only).
    """
    return as_file(files(package) / "data" / name)
