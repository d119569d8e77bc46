"""A root file system of the worker's own: programs see the interpreter, not the host's files.

The fork server builds it in its private mount namespace once it has imported all it needs from the
project, and before it runs any program: a tmpfs holding bind mounts of only what Python needs, into
which it pivots, dropping the old root (nothing in the namespace can reach it afterwards). It holds:

- the system's programs and libraries: /usr, and /bin, /sbin, /lib* as on the host (links or binds);
- the interpreter: its executable, its standard library (the search path of the ``-I -S`` worker,
  lib-dynload included) and the directories of the shared libraries it has loaded (libpython);
- the few files of /etc that the C library and the standard library read (time zone, loader cache);
- /dev with null, zero, full, random and urandom; /proc; empty /tmp and /dev/shm for the scratch.

Every site-packages and dist-packages directory inside those trees is covered by an empty read-only
tmpfs, and so is each of the ``hide`` paths (the caller's import paths) that lies inside one: no
installed package, this project's included, can be read or imported. The project's sources, home
directories and the rest of the host are simply absent. Directories made only to lead to a bound
path are mode 0711: a program can pass through /root to the interpreter but cannot list /root.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Sequence

from mrlm.envs.sandbox.forkserver import linux

#: The system's trees, bound whole (or recreated as the links they are on merged-/usr systems).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Read by the dynamic loader, the C library or the standard library (time, mimetypes, platform).
ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/nsswitch.conf",
    "/etc/mime.types",
    "/etc/os-release",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: Where the new root is assembled before the pivot (any directory the host surely has will do:
#: the mount is private to the worker, and every source is opened before it covers the host's).
STAGING = "/tmp"
_LINKS = {"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1"}
_LINKS["/dev/stderr"] = "/proc/self/fd/2"
_LISTABLE = ("/dev", "/etc", "/proc", "/tmp", "/dev/shm")
_PACKAGE_DIRS = ("site-packages", "dist-packages")


def enter(interpreter: Sequence[str], hide: Iterable[str], own_proc: bool) -> bool:
    """Build the new root and pivot into it. Needs CAP_SYS_ADMIN in a private mount namespace.

    Args:
        interpreter: what of the interpreter must stay visible (its executable, its search path);
            the directories of the shared libraries this process has loaded are added.
        hide: paths to cover should they lie in a visible tree (site-packages found there are
            covered in any case).
        own_proc: mount a /proc of this process's pid namespace (else the current /proc is bound).

    Returns:
        Whether /proc is the pid namespace's own (a /proc of the host's is bound where it is not).

    Raises:
        OSError: the new root could not be built; the old one is left as it was.
    """
    system = _system_trees()
    needed = {os.path.realpath(path) for path in interpreter if os.path.exists(path)} | _loaded_libraries()
    kept = _outermost([*system, *_outside(system, needed)])
    covered = [path for path in kept if any(_inside(path, mount) for mount in _LISTABLE)]
    if covered:  # the worker's own mounts there would hide them
        raise OSError(0, f"the interpreter's files {covered} lie under /tmp, /dev or /proc")
    masks = _masks(kept, hide, needed)
    sources: dict[str, int] = {}
    try:
        for path in (*kept, *(path for path in (*ETC, *DEVICES) if not os.path.islink(path)), "/proc"):
            with contextlib.suppress(FileNotFoundError):  # the optional files of /etc
                sources[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        linux.mount("tmpfs", STAGING, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755,size=1m")
        try:
            own_proc = _populate(sources, masks, own_proc)
            for path in interpreter:
                if os.path.exists(path) and not os.path.exists(STAGING + path):
                    raise OSError(0, f"{path} is missing from the new root")
            os.chdir(STAGING)
            linux.pivot_root(".", ".")  # the old root lands on top of the new one...
        except BaseException:
            os.chdir("/")
            linux.unmount(STAGING)
            raise
        linux.unmount(".")  # ...and goes at once
        os.chdir("/")
    finally:
        for handle in sources.values():
            os.close(handle)
    return own_proc


def _populate(sources: dict[str, int], masks: list[str], own_proc: bool) -> bool:
    for directory in _LISTABLE:
        os.mkdir(STAGING + directory, 0o755)
        os.chmod(STAGING + directory, 0o755)  # whatever the umask
    for path in (*SYSTEM, *ETC, *DEVICES):
        if os.path.islink(path):
            _make_parents(path)
            os.symlink(os.readlink(path), STAGING + path)
    for link, target in _LINKS.items():
        os.symlink(target, STAGING + link)
    for path, handle in sources.items():
        if path == "/proc":
            continue
        _make_parents(path)
        if stat.S_ISDIR(os.fstat(handle).st_mode):
            os.mkdir(STAGING + path, 0o700)
        else:
            os.close(os.open(STAGING + path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        _bind(handle, STAGING + path)
    for path in masks:
        flags = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
        linux.mount("tmpfs", STAGING + path, "tmpfs", flags, "mode=0755,size=4k")
    if own_proc:
        try:  # shows the worker's processes only, not the host's
            flags = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
            linux.mount("proc", STAGING + "/proc", "proc", flags)
            return True
        except OSError:
            pass
    _bind(sources["/proc"], STAGING + "/proc")
    return False


def _bind(handle: int, target: str) -> None:
    linux.mount(f"/proc/self/fd/{handle}", target, None, linux.MS_BIND | linux.MS_REC)


def _make_parents(path: str) -> None:
    """Create the directories leading to ``path`` in the new root, passable but not listable."""
    current = STAGING
    for part in os.path.dirname(path).strip("/").split("/"):
        if not part:
            continue
        current = os.path.join(current, part)
        if not os.path.isdir(current):
            os.mkdir(current)
            os.chmod(current, 0o711)


def _system_trees() -> list[str]:
    """The system trees that are real directories (the links among them are recreated as links)."""
    return [path for path in SYSTEM if os.path.isdir(path) and not os.path.islink(path)]


def _outside(system: list[str], needed: set[str]) -> list[str]:
    """What of ``needed`` the system trees do not show: files, and libraries by their directory."""
    found = {os.path.dirname(path) if path.endswith(".so") or ".so." in path else path for path in needed}
    return sorted(path for path in found if not any(_inside(path, tree) for tree in system))


def _loaded_libraries() -> set[str]:
    """Real paths of the files mapped into this process: the interpreter and its shared libraries."""
    libraries = set()
    with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as maps:
        for line in maps:
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/") and os.path.isfile(fields[5]):
                libraries.add(os.path.realpath(fields[5]))
    return libraries


def _masks(kept: list[str], hide: Iterable[str], needed: set[str]) -> list[str]:
    """Directories to cover: package directories inside the kept trees, and the ``hide`` paths
    there, but never one holding something the interpreter needs."""
    candidates = [path for tree in kept if os.path.isdir(tree) for path in _package_dirs(tree)]
    candidates += [path for path in hide if os.path.isdir(path)]
    masks = set()
    for candidate in candidates:
        path = os.path.realpath(candidate)
        inside = any(path != tree and _inside(path, tree) for tree in kept)
        if inside and not any(_inside(own, path) for own in needed):
            masks.add(path)
    return sorted(masks)


def _package_dirs(tree: str) -> list[str]:
    """site-packages and dist-packages where interpreters put them: ``lib/python3.X/site-packages``,
    Debian's ``lib/python3/dist-packages`` and ``local/lib/python3.X/dist-packages``, and so on."""
    bases = [tree, *(os.path.join(tree, sub) for sub in ("lib", "lib64", "local/lib", "local/lib64"))]
    found = []
    for base in bases:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        parents = [base, *(os.path.join(base, name) for name in names if name.startswith("python"))]
        found += [
            os.path.join(parent, name)
            for parent in parents
            for name in _PACKAGE_DIRS
            if os.path.isdir(os.path.join(parent, name))
        ]
    return found


def _outermost(paths: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_inside(path, other) for other in kept):
            kept.append(path)
    return kept


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")
