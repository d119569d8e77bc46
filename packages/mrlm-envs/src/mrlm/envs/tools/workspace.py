"""The ``files`` tool: list, read and write files in a per-episode directory, and nowhere else.

Paths come from the model, so each one is checked before use: it must be relative, free of ``..``,
NUL bytes and control characters, and within length and depth limits. It is then resolved with
``os.path.realpath`` and must stay inside the root, and every component is opened with
``O_NOFOLLOW`` relative to its parent directory's descriptor, so a symbolic link is refused wherever
it appears, even one planted inside the root. The tool itself never creates links. Writes are
bounded per file and in total.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mrlm.envs.tools.registry import Tool, ToolError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Longest file or directory name, in bytes (Linux NAME_MAX).
NAME_MAX = 255


class PathError(ToolError):
    """A path was refused or does not lead to what the operation needs."""


@dataclass(frozen=True)
class WorkspaceLimits:
    """Bounds of the ``files`` tool.

    Attributes:
        max_path_chars: longest path accepted.
        max_depth: most directory levels in a path.
        max_file_bytes: largest file written, and most bytes of a file shown by ``read``.
        max_total_bytes: most bytes all files together may hold.
        max_files: most files the workspace may hold.
        max_list_entries: most entries ``list`` shows.
    """

    max_path_chars: int = 200
    max_depth: int = 8
    max_file_bytes: int = 64 * 1024
    max_total_bytes: int = 1 << 20
    max_files: int = 100
    max_list_entries: int = 200


class Workspace:
    """A fresh temporary directory per episode, seeded with the task's files.

    ``reset`` replaces the directory, ``close`` removes it (it is also removed if the workspace is
    garbage-collected). A pickled workspace carries its files; unpickling makes a new directory.
    """

    def __init__(self, limits: WorkspaceLimits | None = None) -> None:
        self.limits = limits or WorkspaceLimits()
        self._root: str | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def root(self) -> str | None:
        """The directory of the current episode (None before the first reset and after close)."""
        return self._root

    def reset(self, files: Mapping[str, str] | None = None) -> None:
        """Remove the previous directory, make a fresh one and write ``files`` (path -> text) into it."""
        self.close()
        root = os.path.realpath(tempfile.mkdtemp(prefix="mrlm-workspace-"))
        self._root = root
        self._finalizer = weakref.finalize(self, shutil.rmtree, root, True)
        for path, text in (files or {}).items():
            self.write(path, text)

    def close(self) -> None:
        """Remove the directory. Safe to call more than once."""
        if self._finalizer is not None:
            self._finalizer()
        self._finalizer = None
        self._root = None

    # ----------------------------------------------------------------------------------------------
    # Operations

    def list_dir(self, path: str = ".") -> str:
        """The entries of a directory, one per line: ``name/`` for directories, ``name (N bytes)``."""
        parts = self._parts(path, allow_root=True)
        fd = self._open_dir(parts)
        try:
            with os.scandir(fd) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
            # Described while the descriptor is open: entries of an fd scan stat relative to it.
            lines = [_describe(entry) for entry in entries[: self.limits.max_list_entries]]
        finally:
            os.close(fd)
        if not entries:
            return "(empty directory)"
        if len(entries) > self.limits.max_list_entries:
            lines.append(f"[... {len(entries) - self.limits.max_list_entries} more entries not shown]")
        return "\n".join(lines)

    def read(self, path: str) -> str:
        """The text of a file (UTF-8, undecodable bytes replaced), cut at ``max_file_bytes``."""
        parts = self._parts(path, allow_root=False)
        fd = self._open_file(parts, _READ_FLAGS)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise PathError(f"'{_show(path)}' is a directory; use the 'list' operation")
            if not stat.S_ISREG(info.st_mode):
                raise PathError(f"'{_show(path)}' is not a regular file")
            data = _read_up_to(fd, self.limits.max_file_bytes)
        finally:
            os.close(fd)
        text = data.decode("utf-8", errors="replace")
        if info.st_size > len(data):
            text += f"\n[... file is {info.st_size} bytes; only the first {len(data)} are shown]"
        return text

    def write(self, path: str, content: str) -> str:
        """Create or replace a file (parent directories are created); returns a confirmation."""
        parts = self._parts(path, allow_root=False)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise PathError("the content is not valid text (it has unpaired surrogates)") from None
        if len(data) > self.limits.max_file_bytes:
            raise PathError(
                f"the content is too large ({len(data)} bytes; at most {self.limits.max_file_bytes})"
            )
        used_bytes, used_files, existing = self._usage(parts)
        if used_bytes - existing + len(data) > self.limits.max_total_bytes:
            raise PathError(f"the workspace is full (at most {self.limits.max_total_bytes} bytes in all)")
        if existing < 0 and used_files >= self.limits.max_files:
            raise PathError(f"the workspace is full (at most {self.limits.max_files} files)")
        parent = self._open_dir(parts[:-1], create=True)
        try:
            fd = self._open_in(parent, parts, len(parts) - 1, _WRITE_FLAGS, mode=0o600)
        finally:
            os.close(parent)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PathError(f"'{_show(path)}' is not a regular file")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return f"wrote {len(data)} bytes to {'/'.join(parts)}"

    def snapshot(self) -> dict[str, bytes]:
        """Every regular file (relative path -> bytes), links and special files left out."""
        root = self._require_root()
        files: dict[str, bytes] = {}
        for directory, _subdirs, names in os.walk(root):  # does not descend into linked directories
            for name in sorted(names):
                full = os.path.join(directory, name)
                try:
                    fd = os.open(full, _READ_FLAGS)
                except OSError:
                    continue  # a link (refused by O_NOFOLLOW) or gone
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        files[os.path.relpath(full, root)] = _read_up_to(fd, self.limits.max_file_bytes)
                finally:
                    os.close(fd)
        return dict(sorted(files.items()))

    # ----------------------------------------------------------------------------------------------
    # Path checks

    def _require_root(self) -> str:
        if self._root is None:
            raise PathError("the workspace is not open (reset the environment)")
        return self._root

    def _parts(self, path: str, *, allow_root: bool) -> list[str]:
        """The checked components of a relative path."""
        if "\x00" in path:
            raise PathError("the path contains a NUL byte")
        if len(path) > self.limits.max_path_chars:
            raise PathError(
                f"the path is too long ({len(path)} characters; at most {self.limits.max_path_chars})"
            )
        if any(ord(char) < 32 or ord(char) == 127 for char in path):
            raise PathError("the path contains control characters")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise PathError("the path is not valid text (it has unpaired surrogates)") from None
        if path.startswith(("/", "~")):
            raise PathError(
                "absolute paths are not allowed; give a path relative to the workspace, like 'data.csv'"
            )
        parts = [part for part in path.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise PathError("'..' is not allowed: paths stay inside the workspace")
        if not parts and not allow_root:
            raise PathError("the path names the workspace itself; name a file")
        if len(parts) > self.limits.max_depth:
            raise PathError(f"the path is too deep (more than {self.limits.max_depth} levels)")
        if any(len(part.encode("utf-8")) > NAME_MAX for part in parts):
            raise PathError(f"a name in the path is longer than {NAME_MAX} bytes")
        root = self._require_root()
        real = os.path.realpath(os.path.join(root, *parts))
        if real != root and not real.startswith(root + os.sep):
            raise PathError("the path leads outside the workspace through a symbolic link; refused")
        return parts

    def _open_dir(self, parts: list[str], *, create: bool = False) -> int:
        """A descriptor of the directory ``parts``, opened one component at a time without following links."""
        fd = os.open(self._require_root(), _DIR_FLAGS)
        try:
            for index, part in enumerate(parts):
                if create:
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as error:
                        raise _error(error, parts, index) from None
                next_fd = self._open_in(fd, parts, index, _DIR_FLAGS)
                os.close(fd)
                fd = next_fd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_file(self, parts: list[str], flags: int) -> int:
        parent = self._open_dir(parts[:-1])
        try:
            return self._open_in(parent, parts, len(parts) - 1, flags)
        finally:
            os.close(parent)

    @staticmethod
    def _open_in(directory: int, parts: list[str], index: int, flags: int, mode: int = 0o600) -> int:
        try:
            return os.open(parts[index], flags, mode, dir_fd=directory)
        except OSError as error:
            if _is_link(directory, parts[index]):
                raise PathError(
                    f"'{_show('/'.join(parts[: index + 1]))}' is a symbolic link; links are not followed"
                ) from None
            raise _error(error, parts, index) from None

    def _usage(self, parts: list[str]) -> tuple[int, int, int]:
        """Bytes and files in the workspace, and the size of the file at ``parts`` (-1 if none)."""
        total = count = 0
        existing = -1
        target = os.path.join(self._require_root(), *parts)
        for directory, _subdirs, names in os.walk(self._require_root()):
            for name in names:
                full = os.path.join(directory, name)
                try:
                    info = os.lstat(full)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
                    count += 1
                    if full == target:
                        existing = info.st_size
        return total, count, existing

    # ----------------------------------------------------------------------------------------------
    # Pickling: a copy gets its own directory holding the same files.

    def __getstate__(self) -> dict[str, Any]:
        files = self.snapshot() if self._root is not None else None
        return {"limits": self.limits, "files": files}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.limits = state["limits"]
        self._root = None
        self._finalizer = None
        if state["files"] is not None:
            self.reset()
            root = self._require_root()
            for relative, data in state["files"].items():
                full = os.path.join(root, relative)
                os.makedirs(os.path.dirname(full), mode=0o700, exist_ok=True)
                with open(full, "wb") as handle:
                    handle.write(data)


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _is_link(directory: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _error(error: OSError, parts: list[str], index: int) -> PathError:
    shown = _show("/".join(parts[: index + 1]))
    reasons = {
        errno.ENOENT: f"'{shown}' does not exist",
        errno.ENOTDIR: f"'{shown}' is not a directory",
        errno.EISDIR: f"'{shown}' is a directory",
        errno.ELOOP: f"'{shown}' is a symbolic link; links are not followed",
        errno.EACCES: f"'{shown}' cannot be accessed",
        errno.ENAMETOOLONG: "the path is too long",
        errno.ENOSPC: "no space left for the file",
        errno.EFBIG: "the file is too large",
    }
    return PathError(reasons.get(error.errno or 0, f"'{shown}': {os.strerror(error.errno or 0)}"))


def _describe(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name} (symbolic link, not followed)"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    if entry.is_file(follow_symlinks=False):
        return f"{entry.name} ({entry.stat(follow_symlinks=False).st_size} bytes)"
    return f"{entry.name} (special file)"


def _show(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class FilesTool:
    """The callable behind the ``files`` tool: dispatches the operation to the workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def __call__(self, arguments: dict[str, Any]) -> str:
        operation, path = arguments["operation"], arguments["path"]
        content = arguments.get("content")
        if operation == "write":
            if content is None:
                raise ToolError("the 'write' operation needs 'content'")
            return self.workspace.write(path, content)
        if content is not None:
            raise ToolError(f"'content' is only used by the 'write' operation, not '{operation}'")
        return self.workspace.list_dir(path) if operation == "list" else self.workspace.read(path)


def files_tool(workspace: Workspace) -> Tool:
    """The ``files`` tool: ``{"operation": "list" | "read" | "write", "path": str, "content": str}``."""
    limits = workspace.limits
    return Tool(
        name="files",
        description=(
            "Work with the files of your workspace directory. 'list' shows a directory's entries, 'read' "
            "returns a file's text, 'write' creates or replaces a file with 'content'. Paths are relative "
            f"to the workspace ('data.csv', 'notes/todo.txt'); '..', absolute paths and symbolic links are "
            f"refused. Files hold at most {limits.max_file_bytes} bytes."
        ),
        parameters={
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["list", "read", "write"]},
                "path": {
                    "type": "string",
                    "description": "a path relative to the workspace; '.' is the workspace itself",
                    "maxLength": limits.max_path_chars,
                    "default": ".",
                },
                "content": {
                    "type": "string",
                    "description": "the text to write (only for 'write')",
                    "maxLength": limits.max_file_bytes,
                },
            },
            "required": ["operation"],
            "additionalProperties": False,
        },
        function=FilesTool(workspace),
    )
