"""Whether a run's directory or an output file can be written, checked before any model is loaded."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from mrlm.train.loop.errors import OutputDirError


def check_output_dir(output_dir: str | Path, setting: str = "run.output_dir") -> None:
    """Raise :class:`OutputDirError` when ``output_dir`` cannot become a run's directory.

    It can when it is a writable directory, or when its nearest existing parent is one (it is
    created later). Nothing is created here. ``setting`` names the directory in the message.
    """
    path = Path(output_dir).expanduser()
    existing = path
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "a file, not a directory"
        if existing.is_symlink() and not existing.exists():  # mkdir would fail on it, after the run
            what = f"a symbolic link to {os.path.realpath(existing)!r}, which does not exist"
        if existing == path:
            raise OutputDirError(f"{setting} {str(path)!r} is {what}")
        raise OutputDirError(f"{setting} {str(path)!r} cannot be created: {str(existing)!r} is {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" ({str(existing)!r}, where it would be created)"
        raise OutputDirError(f"{setting} {str(path)!r} is not writable{where}")
    refusal = _refusal_of_new_files(existing)
    if refusal is not None:
        if existing == path:
            raise OutputDirError(f"{setting} {str(path)!r} refuses new files ({refusal})")
        raise OutputDirError(
            f"{setting} {str(path)!r} cannot be created: {str(existing)!r} refuses new files ({refusal})"
        )


def check_output_file(path: str | Path, setting: str) -> None:
    """Raise :class:`OutputDirError` when the file ``path`` (the value of ``setting``) cannot be
    written: it is a directory, or its directory cannot be created or does not take new files.
    Creates the missing directories (writing the file needs them anyway), never the file.

    A dangling symbolic link is written through, creating its target, so the target is checked
    instead; it is refused when it is a loop of links or its directory does not exist (writing
    through a link creates no directory, and creating one where a stale link points would surprise).
    """
    file = Path(path).expanduser()
    if file.is_symlink() and not file.exists():
        file = _dangling_link_target(file, setting)
    if file.is_dir():
        raise OutputDirError(f"{setting} {str(file)!r} is a directory, not a file")
    check_output_dir(file.parent, f"the directory of {setting}")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputDirError(
            f"the directory of {setting} {str(file.parent)!r} cannot be created: {error.strerror}"
        ) from None
    if file.exists() and not os.access(file, os.W_OK):
        raise OutputDirError(f"{setting} {str(file)!r} is not writable")
    refusal = _refusal_of_new_files(file.parent)
    if refusal is not None:
        raise OutputDirError(
            f"{setting} {str(file)!r} cannot be written: its directory refuses new files ({refusal})"
        )


def _dangling_link_target(link: Path, setting: str) -> Path:
    """The file that writing to the dangling symbolic link ``link`` creates, or OutputDirError
    naming the link and why nothing can be written through it."""
    target = Path(os.path.realpath(link))
    if target.is_symlink():  # realpath stops inside a loop, on one of its links
        raise OutputDirError(f"{setting} {str(link)!r} is a loop of symbolic links")
    if not target.parent.is_dir():
        missing = "does not exist" if not os.path.lexists(target.parent) else "is not a directory"
        raise OutputDirError(
            f"{setting} {str(link)!r} is a symbolic link to {str(target)!r}, whose directory "
            f"{str(target.parent)!r} {missing}"
        )
    return target


def same_file(first: str | Path, second: str | Path) -> bool:
    """Whether ``first`` and ``second`` name one file: the same path once resolved (``~``, ``..``,
    symbolic links), or two names (hard links) of one existing file."""
    a, b = Path(first).expanduser(), Path(second).expanduser()
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet: only its resolved path could match
        return False


def _refusal_of_new_files(directory: Path) -> str | None:
    """Why ``directory`` takes no new file (the system's words), or None when it takes one.

    Permission bits do not tell everything (root passes them, yet /proc or a root-squashed NFS share
    refuse new files): a nameless file made and dropped at once says for sure, and leaves nothing.
    """
    try:
        with tempfile.TemporaryFile(dir=directory):
            return None
    except OSError as error:
        return error.strerror or str(error)


#: The file :func:`fresh_dir` leaves in a directory it made: it names the script that owns it.
FRESH_MARK = ".mrlm-fresh"


def fresh_dir(path: str | Path, owner: str) -> Path:
    """An empty directory at ``path`` for a script (``owner``, e.g. an example) that starts afresh
    on every run, marked as ``owner``'s; return it.

    What is at ``path`` is deleted only when it is ``owner``'s own from an earlier run (it holds the
    mark with ``owner``'s name) or an empty directory. Anything else is refused: a mistyped
    ``--output-dir`` (``.``, ``~``, a project) must never lose a user's files.

    Raises:
        OutputDirError: ``path`` is a file, or a directory holding files another owner (or a
            person) put there; nothing is deleted.
    """
    directory = Path(path).expanduser()
    if os.path.lexists(directory):
        if not directory.is_dir() or directory.is_symlink():
            raise OutputDirError(f"{str(directory)!r} is not a directory {owner} made: give another one")
        mark = directory / FRESH_MARK
        ours = mark.is_file() and mark.read_text(encoding="utf-8", errors="replace") == owner
        if not ours and any(directory.iterdir()):
            raise OutputDirError(
                f"{str(directory)!r} holds files that no earlier run of {owner} wrote, and {owner} "
                "empties its directory on every run: give another directory, or empty it yourself"
            )
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / FRESH_MARK).write_text(owner, encoding="utf-8")
    return directory
