"""Checkpoint manifests: a SHA-256 of every file, written last, checked before anything is loaded.

Loading a checkpoint unpickles ``state/.metadata`` (torch.distributed.checkpoint reads it with
``pickle.load``), and unpickling runs whatever code the file names. So a checkpoint is trusted input,
and :func:`verify` makes sure it is still exactly what :func:`seal` wrote: every file listed in
``manifest.json`` with its size and SHA-256, no file missing, none added, none changed, and no
entry that is not a regular file (a symlink could point anywhere; a FIFO would block the reader).

The digests catch corruption and tampering by someone who cannot also rewrite the manifest; they
are not a signature. With ``MRLM_CHECKPOINT_KEY`` set, :func:`seal` adds an HMAC-SHA256 of the
file list under that key and :func:`verify` requires it, so rewriting the manifest needs the key.

A checkpoint without a manifest (saved before manifests existed) is refused unless
``MRLM_TRUST_UNVERIFIED_CHECKPOINTS=1`` says to load it as it is.

Both functions are collective: the files are split over the processes, each hashes its share, and
every process gets the same verdict (so none waits forever for a peer that gave up).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any

from mrlm.train.loop.distributed import gather_object
from mrlm.train.loop.errors import CheckpointError
from mrlm.train.loop.fsio import replace_text

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
KEY_VARIABLE = "MRLM_CHECKPOINT_KEY"
TRUST_VARIABLE = "MRLM_TRUST_UNVERIFIED_CHECKPOINTS"
_HMAC_FIELD = "hmac_sha256"
_CHUNK = 1 << 20

Entry = tuple[int, str]
"""A file's size in bytes and its SHA-256 as hex."""


def seal(directory: Path, rank: int, world_size: int) -> None:
    """Write ``directory/manifest.json`` for the files in ``directory``. Collective.

    Call it once every other file of the checkpoint is written: the manifest is the last file, and
    replaces its name atomically, so a checkpoint cut short while saving has none.
    """
    names: list[str] = gather_object(list_files(directory) if rank == 0 else None)[0]
    share = {name: digest(directory / name) for name in names[rank::world_size]}
    entries: dict[str, Entry] = {}
    for part in gather_object(share):
        entries.update(part)
    if rank == 0:
        files = {name: {"size": entries[name][0], "sha256": entries[name][1]} for name in sorted(entries)}
        manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "files": files}
        key = _key()
        if key is not None:
            manifest[_HMAC_FIELD] = _signature(key, files)
        replace_text(directory / MANIFEST, json.dumps(manifest, indent=1) + "\n")


def verify(path: Path, rank: int, world_size: int) -> None:
    """Check the checkpoint at ``path`` against its manifest before anything of it is loaded. Collective.

    Raises:
        CheckpointError: one line naming the checkpoint and the first file that does not match
            (or the missing manifest and how to proceed); raised on every process alike.
    """
    # Process 0 reads the listing and the manifest; the others take its plan, so all agree.
    plan: tuple[str | None, list[tuple[str, Entry]]] = gather_object(_plan(path) if rank == 0 else None)[0]
    problem, expected = plan
    if problem is not None:
        raise CheckpointError(problem)
    mine = _first_mismatch(path, expected[rank::world_size])
    problems = [found for found in gather_object(mine) if found is not None]
    if problems:
        raise CheckpointError(problems[0])


def list_files(directory: Path) -> list[str]:
    """Relative POSIX paths of the files under ``directory``, sorted, without the manifest.

    Raises:
        CheckpointError: an entry is neither a directory nor a regular file (symlinks included).
    """
    names = []
    for root, dirs, files in os.walk(directory, followlinks=False):
        for name in dirs + files:
            entry = Path(root) / name
            mode = entry.lstat().st_mode
            relative = entry.relative_to(directory).as_posix()
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise CheckpointError(f"checkpoint {directory} holds {relative}, which is not a regular file")
            if relative != MANIFEST:
                names.append(relative)
    return sorted(names)


def digest(file: Path) -> Entry:
    """The size and SHA-256 of ``file``, read in chunks."""
    hasher = hashlib.sha256()
    size = 0
    with open(file, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
            size += len(chunk)
    return size, hasher.hexdigest()


def _plan(path: Path) -> tuple[str | None, list[tuple[str, Entry]]]:
    """What to hash and against which digest, or the problem that makes hashing pointless."""
    try:
        on_disk = list_files(path)
        if not (path / MANIFEST).is_file():
            return _unverified(path), []
        expected = _read(path)
    except CheckpointError as err:
        return str(err), []
    missing = sorted(set(expected) - set(on_disk))
    if missing:
        return _refusal(path, f"{missing[0]} is listed in {MANIFEST} but missing", len(missing)), []
    extra = [name for name in on_disk if name not in expected]
    if extra:
        return _refusal(path, f"{extra[0]} is not listed in {MANIFEST}", len(extra)), []
    return None, sorted(expected.items())


def _unverified(path: Path) -> str | None:
    """None (load it) when unverified checkpoints are trusted, else the refusal."""
    if os.environ.get(TRUST_VARIABLE, "").strip().lower() in ("1", "true", "yes"):
        warnings.warn(
            f"checkpoint {path} has no {MANIFEST}; loading it unverified because {TRUST_VARIABLE} is set",
            stacklevel=3,
        )
        return None
    return (
        f"checkpoint {path} has no {MANIFEST} (saved by an older MRLM, or not by MRLM), so its files "
        "cannot be verified, and loading it unpickles state/.metadata, which can run any code; "
        f"if you trust where it came from, set {TRUST_VARIABLE}=1 to load it as it is"
    )


def _read(path: Path) -> dict[str, Entry]:
    """The files the manifest lists, after checking its form and, with a key, its HMAC."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        files = manifest["files"]
        entries = {str(name): (int(e["size"]), str(e["sha256"])) for name, e in files.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise CheckpointError(f"checkpoint {path} has an unreadable {MANIFEST}: {err!r}") from err
    if manifest.get("format") != MANIFEST_FORMAT:
        raise CheckpointError(
            f"checkpoint {path} has {MANIFEST} format {manifest.get('format')!r}, expected {MANIFEST_FORMAT}"
        )
    key = _key()
    if key is not None:
        signature = manifest.get(_HMAC_FIELD)
        if not isinstance(signature, str):
            raise CheckpointError(
                f"checkpoint {path}: {KEY_VARIABLE} is set but {MANIFEST} carries no HMAC "
                "(it was saved without the key)"
            )
        if not hmac.compare_digest(signature, _signature(key, files)):
            raise CheckpointError(
                f"checkpoint {path}: the HMAC of {MANIFEST} does not match {KEY_VARIABLE} "
                "(another key, or the manifest was changed); refusing to load it"
            )
    return entries


def _first_mismatch(path: Path, expected: list[tuple[str, Entry]]) -> str | None:
    """The refusal for the first file whose size or SHA-256 differs from the manifest, or None."""
    try:
        # Sizes first: a cheap stat finds most damage before any file is read.
        for name, (size, _) in expected:
            actual = (path / name).stat().st_size
            if actual != size:
                return _refusal(path, f"{name} does not match {MANIFEST} (size {actual}, expected {size})")
        for name, (_, sha256) in expected:
            if digest(path / name)[1] != sha256:
                return _refusal(path, f"{name} does not match {MANIFEST} (SHA-256 differs)")
    except OSError as err:  # gone or unreadable since the listing: still a verdict, never a hang
        return f"checkpoint {path} could not be verified: {err}"
    return None


def _refusal(path: Path, what: str, count: int = 1) -> str:
    more = f" (and {count - 1} more)" if count > 1 else ""
    return (
        f"checkpoint {path} failed verification: {what}{more}; it changed after saving, "
        "so it is not loaded (loading unpickles its files)"
    )


def _key() -> bytes | None:
    key = os.environ.get(KEY_VARIABLE)
    return key.encode("utf-8") if key else None


def _signature(key: bytes, files: Any) -> str:
    # Canonical JSON, so the HMAC does not depend on how the manifest was indented.
    canonical = json.dumps(files, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hmac.new(key, canonical, hashlib.sha256).hexdigest()
