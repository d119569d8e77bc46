"""Make the interpreter's own directories reachable for the sandbox uid, in the worker's mount namespace.

A Python installed under a private directory (pyenv under ``/root``, mode 0700) cannot be read by an
unprivileged uid. For each such directory on the way to the interpreter's files, the worker mounts a
small tmpfs over it and binds back only the interpreter's directories, at their usual paths: imports
keep working and everything else in the private directory stays hidden. The host is not touched.
Where the worker then pivots into a root of its own (see :mod:`rootfs`), this is what lets it reach
the interpreter's files to bind them there; programs see only the new root.

:func:`open_hidden` must run with root's file access (it opens the directories), :func:`expose`
afterwards in a private mount namespace, as a uid mapped in it (tmpfs refuses files of others).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable

from mrlm.envs.sandbox.forkserver import linux


def needed_paths(extra: Iterable[str | None] = ()) -> list[str]:
    """The existing directories this interpreter reads from: prefixes, executable, ``sys.path``."""
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(sys.executable),
        os.path.dirname(os.path.realpath(sys.executable)),
        *sys.path,
        *(path for path in extra if path),
    ]
    found = {os.path.realpath(path) for path in candidates if path}
    directories = {path if os.path.isdir(path) else os.path.dirname(path) for path in found}
    return sorted(path for path in directories if os.path.isdir(path))


#: Directory handles to bind back, by the directory a tmpfs will cover.
Hidden = dict[str, list[tuple[str, int]]]


def has_closed_ancestors(paths: Iterable[str]) -> bool:
    """Whether any of ``paths`` lies below a directory others cannot traverse."""
    return any(_first_closed_ancestor(path) is not None for path in paths)


def open_hidden(paths: Iterable[str]) -> Hidden:
    """Open each of ``paths`` that has an ancestor others cannot traverse, grouped by the first one."""
    covers: dict[str, list[str]] = {}
    for path in _outermost(paths):
        blocker = _first_closed_ancestor(path)
        if blocker is not None:
            covers.setdefault(blocker, []).append(path)
    hidden: Hidden = {}
    for blocker in sorted(covers, key=len):
        if any(blocker.startswith(other + "/") for other in hidden):
            continue  # inside another cover, whose binds bring it back as it was
        hidden[blocker] = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in covers[blocker]]
    return hidden


def expose(hidden: Hidden) -> None:
    """Lay a tmpfs over each blocking directory and bind the opened directories back in; closes them."""
    try:
        for blocker, inside in hidden.items():
            linux.mount("tmpfs", blocker, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=1m")
            for path, handle in inside:
                os.makedirs(path, mode=0o755, exist_ok=True)
                linux.mount(f"/proc/self/fd/{handle}", path, None, linux.MS_BIND | linux.MS_REC)
    finally:
        for inside in hidden.values():
            for _, handle in inside:
                os.close(handle)


def _outermost(paths: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == other or path.startswith(other.rstrip("/") + "/") for other in kept):
            kept.append(path)
    return kept


def _first_closed_ancestor(path: str) -> str | None:
    ancestor = "/"
    for part in path.strip("/").split("/")[:-1]:
        ancestor = os.path.join(ancestor, part)
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None
