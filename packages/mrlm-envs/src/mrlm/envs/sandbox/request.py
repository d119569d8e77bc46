"""Check what a caller asks to run and turn it into a worker request."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from mrlm.envs.sandbox.api import Limits

#: The program itself is written to this file of the scratch directory.
MAIN = "main.py"


def check_file_name(name: object) -> str:
    """A name for a file in the scratch directory: relative, normalised, no way out of it.

    Raises:
        ValueError: the name is empty, absolute, has ``..``/``.``/empty parts or NUL, or is ``main.py``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"file name {name!r} must be a non-empty string")
    parts = name.split("/")
    if "\0" in name or name.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"file name {name!r} leaves the scratch directory or is not normalised")
    if PurePosixPath(name) == PurePosixPath(MAIN):
        raise ValueError(f"file name {name!r} is taken by the program itself")
    return name


def build_request(source: str, stdin: str, files: Mapping[str, str] | None, limits: Limits) -> dict[str, Any]:
    """The request for one execution.

    Raises:
        TypeError: source, stdin or a file's content is not a str.
        ValueError: a file name escapes the scratch directory, a text holds what UTF-8 cannot (a
            lone surrogate), or everything exceeds ``scratch_bytes``.
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if not isinstance(stdin, str):
        raise TypeError(f"stdin must be a str, got {type(stdin).__name__}")
    checked: dict[str, str] = {}
    for name, text in (files or {}).items():
        if not isinstance(text, str):
            raise TypeError(f"the content of file {name!r} must be a str, got {type(text).__name__}")
        checked[check_file_name(name)] = text
    size = sum(_utf8_size(text, what) for what, text in (("source", source), *checked.items()))
    _utf8_size(stdin, "stdin")
    if size > limits.scratch_bytes:
        raise ValueError(f"the program and its files take {size} bytes, over Limits.scratch_bytes")
    return {"source": source, "stdin": stdin, "files": checked, "limits": _fields(limits)}


@functools.lru_cache(maxsize=64)
def _fields(limits: Limits) -> dict[str, Any]:
    """The limits as a dict, made once per distinct Limits (asdict is slow, and callers reuse them)."""
    return dataclasses.asdict(limits)


def _utf8_size(text: str, what: str) -> int:
    """The size of ``text`` in UTF-8, which is how the program gets it.

    Raises:
        ValueError: ``text`` holds a lone surrogate, which UTF-8 cannot hold.
    """
    try:
        return len(text.encode())
    except UnicodeEncodeError as error:
        raise ValueError(
            f"{what} holds a lone surrogate at index {error.start}, which UTF-8 cannot encode"
        ) from None
