"""Durable file writes: data reaches the disk before a rename makes it visible.

A rename is atomic on POSIX filesystems, but only orders the *names*: without fsync of the file
(and of the directory holding the new name) a power cut can leave a renamed file empty. Everything
that makes a checkpoint or the final model visible goes through here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (the names created, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and flush it to disk."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` and flush it to disk."""
    write_bytes(path, text.encode("utf-8"))


def write_torch(path: Path, obj: Any) -> None:
    """``torch.save`` ``obj`` to ``path`` and flush it to disk."""
    with open(path, "wb") as handle:
        torch.save(obj, handle)
        handle.flush()
        os.fsync(handle.fileno())


def replace_text(path: Path, text: str) -> None:
    """Replace the contents of ``path`` atomically: readers see the old or the new text, never a mix."""
    temporary = path.with_name(f".{path.name}.tmp")
    write_text(temporary, text)
    os.replace(temporary, path)
    fsync_dir(path.parent)


def fsync_tree(path: Path) -> None:
    """Flush every directory under ``path`` (files are flushed when written)."""
    for directory, _, _ in os.walk(path):
        fsync_dir(Path(directory))


def remove_tree(path: Path) -> None:
    """Delete a directory tree if it exists."""
    shutil.rmtree(path, ignore_errors=True)
