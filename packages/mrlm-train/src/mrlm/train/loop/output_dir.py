"""Whether ``run.output_dir`` can hold a run, checked before any model is loaded."""

from __future__ import annotations

import os
from pathlib import Path

from mrlm.train.loop.errors import OutputDirError


def check_output_dir(output_dir: str | Path) -> None:
    """Raise :class:`OutputDirError` when ``output_dir`` cannot become a run's directory.

    It can when it is a writable directory, or when its nearest existing parent is one (it is
    created later). Nothing is created here.
    """
    path = Path(output_dir).expanduser()
    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        if existing == path:
            raise OutputDirError(f"run.output_dir {str(path)!r} is a file, not a directory")
        raise OutputDirError(
            f"run.output_dir {str(path)!r} cannot be created: {str(existing)!r} is a file, not a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" ({str(existing)!r}, where it would be created)"
        raise OutputDirError(f"run.output_dir {str(path)!r} is not writable{where}")
