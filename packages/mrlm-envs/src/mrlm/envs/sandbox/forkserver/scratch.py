"""The scratch directory of executions: the worker's tmpfs at /tmp, or fresh directories on disk.

With a mount namespace the worker mounts one tmpfs at /tmp (and binds it at /dev/shm), fills it with
the program's files before each execution and empties it afterwards, once no process of the
execution is left. A mount namespace per execution would be cleaner still, but copying the mount
table and tearing it down again costs a quarter of an execution. Without a mount namespace each
execution makes a fresh directory on disk (as the sandbox uid, so that it owns it), removed after.
"""

from __future__ import annotations

import contextlib
import os
import stat

from mrlm.envs.sandbox.forkserver import linux, program

#: Where the scratch directory is when the worker has its own mount namespace.
PRIVATE = "/tmp"
#: Mounted at the same tmpfs: POSIX shared memory and semaphores (multiprocessing locks) live there.
SHARED_MEMORY = "/dev/shm"


class PrivateScratch:
    """The worker's tmpfs at :data:`PRIVATE`, sized per execution, owned by the programs' uid."""

    def __init__(self, owner: int) -> None:
        self.owner = owner
        self._size: int | None = None

    def mount(self, size: int) -> None:
        """Mount it, and the same at :data:`SHARED_MEMORY`."""
        self._mount(size)
        linux.mount(PRIVATE, SHARED_MEMORY, None, linux.MS_BIND)

    def resize(self, size: int) -> None:
        """Its size limit for the next execution (it is empty: any size fits)."""
        if size != self._size:
            self._mount(size)

    def change_owner(self, owner: int) -> None:
        self.owner = owner
        os.chown(PRIVATE, owner, owner)

    def fill(self, files: tuple[tuple[str, bytes], ...], source: bytes) -> None:
        """Write the program and its files, owned by the programs' uid; we are in it afterwards."""
        os.chdir(PRIVATE)
        write_files(files, source, self.owner)

    def empty(self) -> None:
        """Remove everything in it (never following links): call once no process of the execution
        is left, so that nothing can be added behind our back. Should anything resist, a new tmpfs
        replaces the old one."""
        with os.scandir(PRIVATE) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    remove_tree(entry.path)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
        if os.listdir(PRIVATE) and self._size is not None:  # say, a tree deeper than PATH_MAX
            linux.unmount(SHARED_MEMORY)
            linux.unmount(PRIVATE)
            size, self._size = self._size, None
            self.mount(size)

    def _mount(self, size: int) -> None:
        options = f"size={size},nr_inodes=16384,mode=0700,uid={self.owner},gid={self.owner}"
        flags = linux.MS_NOSUID | linux.MS_NODEV
        if self._size is None:
            linux.mount("tmpfs", PRIVATE, "tmpfs", flags, options)
        else:
            linux.mount(None, PRIVATE, None, flags | linux.MS_REMOUNT, options)
        self._size = size


def on_disk(tmpdir: str) -> str:
    """A name for a fresh scratch directory on disk; the execution makes it, as the sandbox uid.
    (Not tempfile: it imports random, whose after-fork reseeding every execution would pay for.)"""
    return os.path.join(tmpdir, f"mrlm-sandbox-{os.urandom(8).hex()}")


def write_files(files: tuple[tuple[str, bytes], ...], source: bytes, owner: int | None = None) -> None:
    """Write the program (as main.py, so tracebacks can quote its lines) and its files into the
    current directory, owned by ``owner`` if given."""
    for name, data in (*files, (program.MAIN, source)):
        _write(name, data, owner)


def _write(name: str, data: bytes, owner: int | None) -> None:
    directory = os.path.dirname(name)
    if directory:
        parts = directory.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(path).st_mode):  # never through a link
                    raise NotADirectoryError(f"{path} is not a directory") from None
                continue
            if owner is not None:
                os.chown(path, owner, owner)
    # O_NOFOLLOW | O_EXCL: never through a link, never over something already there.
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        if owner is not None:
            os.fchown(fd, owner, owner)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def remove_tree(path: str) -> None:
    """Remove a directory, even where the program took away its own permissions, without recursion
    (the program may have nested directories thousands deep); what cannot be removed stays. (Not
    shutil: it loads the compression libraries, whose mappings every fork would then copy.)"""
    directories: list[str] = []
    pending = [path]
    while pending:
        directory = pending.pop()
        directories.append(directory)
        try:
            os.chmod(directory, stat.S_IRWXU)
            with os.scandir(directory) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
        except OSError:
            continue
    for directory in reversed(directories):  # deepest first
        with contextlib.suppress(OSError):
            os.rmdir(directory)
