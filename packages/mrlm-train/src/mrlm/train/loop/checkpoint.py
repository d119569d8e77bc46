"""Checkpoints on disk: layout, atomic saving, finding the latest, loading, pruning.

Layout of ``<output_dir>/checkpoints/step-000123/`` (the step is the number of training steps
done)::

    state/           every trainable model and its optimizer, each under its name
                     (``policy.model``, ``policy.optimizer``, ``critic.model``, ...), written with
                     torch.distributed.checkpoint (DCP)
    rank-00000.pt    per process: its python/numpy/torch RNG states and its extra_state
    trainer.pt       step, each model's scheduler state (and the fp16 loss-scaler's)
    config.yaml      the run's resolved config
    meta.json        format, step, world size, strategy, the names of the trainable models, the
                     class of the run's config (another algorithm's run refuses the checkpoint), a
                     digest of the weights a model runs but the checkpoint leaves out (the base
                     under per-agent adapters; another base refuses the checkpoint)

Frozen models (a reference policy) are not saved: they never change, and the algorithm builds them
again from its config when it resumes.
    manifest.json    size and SHA-256 of every other file: written last (see manifest.py)

Why DCP for the model and optimizer, in every strategy: under FSDP each process writes only its
own shards, in parallel, with no process ever holding the whole model (a gathered full state dict
would need it all in one process's memory); without FSDP the same call writes one copy of the
replicated tensors. Keys are plain parameter names (no DDP ``module.`` or FSDP prefixes), so a
checkpoint is independent of the wrapper: DCP reshards on load, e.g. to another number of processes
(model and optimizer only: per-process RNG streams then cannot be continued exactly).

Atomicity: everything is written into ``checkpoints/.tmp-step-000123``, flushed to disk, and only
then renamed to ``step-000123``. A process killed while saving leaves a ``.tmp-`` directory, which
is never taken for a checkpoint and is deleted when the next session starts; the previous checkpoints
stay untouched. Old checkpoints are first renamed to ``.trash-...``, then deleted.

Trust: loading unpickles ``state/.metadata`` (DCP reads it with ``pickle.load``), so a checkpoint
is trusted input. Resuming first checks every file against ``manifest.json`` and loads nothing from a
checkpoint with a missing, extra or changed file (see :mod:`mrlm.train.loop.manifest`).

All ranks share ``output_dir`` (a shared filesystem when there are several machines).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from mrlm.train.loop.errors import CheckpointError
from mrlm.train.loop.fsio import fsync_dir, fsync_tree, remove_tree, write_text, write_torch

CHECKPOINTS = "checkpoints"
TEMP_PREFIX = ".tmp-"
TRASH_PREFIX = ".trash-"
FORMAT_VERSION = 2
META = "meta.json"
TRAINER = "trainer.pt"
STATE = "state"
CONFIG = "config.yaml"

_STEP_DIR = re.compile(r"^step-(\d+)$")


def checkpoint_name(step: int) -> str:
    """Directory name of the checkpoint taken after ``step`` optimizer steps."""
    return f"step-{step:06d}"


def rank_file(rank: int) -> str:
    """File name of one process's RNG and extra state."""
    return f"rank-{rank:05d}.pt"


def list_checkpoints(output_dir: Path) -> list[tuple[int, Path]]:
    """Committed checkpoints of a run as ``(step, path)``, oldest first; temporary ones are ignored."""
    root = output_dir / CHECKPOINTS
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _STEP_DIR.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The committed checkpoint with the most steps, or None."""
    found = list_checkpoints(output_dir)
    return found[-1][1] if found else None


def resolve_resume(resume: str, output_dir: Path) -> Path | None:
    """The checkpoint that ``run.resume`` names: "latest", "auto" (None if there is none) or a path."""
    if resume in ("latest", "auto"):
        latest = latest_checkpoint(output_dir)
        if latest is None and resume == "latest":
            raise CheckpointError(
                f'resume="latest" but there is no checkpoint in {output_dir / CHECKPOINTS} '
                '(use resume="auto" to start fresh when there is none)'
            )
        return latest
    path = Path(resume)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist (or is not a directory)")
    if (path / CHECKPOINTS).is_dir():  # a run's directory, not one of its checkpoints
        newest = latest_checkpoint(path)
        hint = f"its newest is {newest}" if newest is not None else f"{path / CHECKPOINTS} holds none"
        raise CheckpointError(
            f"{path} is a run's directory, not a checkpoint: name one of its checkpoints "
            f"({hint}), or resume latest with the run's output_dir"
        )
    return path


def clean_stale(output_dir: Path) -> None:
    """Delete what interrupted saves and prunes left behind (main process, nobody saving)."""
    root = output_dir / CHECKPOINTS
    if not root.is_dir():
        return
    for entry in root.iterdir():
        if entry.name.startswith((TEMP_PREFIX, TRASH_PREFIX)):
            remove_tree(entry)


def begin(output_dir: Path, step: int) -> Path:
    """Create the empty temporary directory of a checkpoint (main process) and return it."""
    root = output_dir / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    temporary = root / f"{TEMP_PREFIX}{checkpoint_name(step)}"
    remove_tree(temporary)
    temporary.mkdir()
    return temporary


def write_state(directory: Path, parts: Mapping[str, tuple[torch.nn.Module, torch.optim.Optimizer]]) -> None:
    """Write every trainable model and its optimizer with DCP into ``directory/state``, each under
    its name (``<name>.model``, ``<name>.optimizer``). Collective: every rank calls it.

    Each model is the unwrapped module (for DDP) or the FSDP-sharded one. DCP fills in optimizer
    state that does not exist yet (before the first step) by a zero-lr step; that state is dropped
    again here, and :func:`load_state` drops it on load, so saving never changes training.
    """
    import torch.distributed.checkpoint as dcp

    had_state = {name: bool(optimizer.state) for name, (_, optimizer) in parts.items()}
    with _single_process_quiet():
        dcp.save(
            _state_dicts(parts),
            storage_writer=dcp.FileSystemWriter(directory / STATE, sync_files=True),
            no_dist=not _has_process_group(),
        )
    for name, (_, optimizer) in parts.items():
        if not had_state[name]:
            optimizer.state.clear()


def unsaved_fingerprints(
    parts: Mapping[str, tuple[torch.nn.Module, torch.optim.Optimizer]],
) -> dict[str, str]:
    """For each model of ``parts`` that runs weights the checkpoint leaves out, a digest of them.

    A model that runs modules it does not register (an agent's adapter view of the base that every
    agent shares) names them with ``unregistered_modules()``; its state dict, and so a checkpoint,
    holds only its own weights. The digest covers those modules' parameters that no model of
    ``parts`` registers (the base, not the other agents' adapters): names, shapes, dtypes and 64
    values spread over each tensor, enough to tell another base (other weights differ almost
    everywhere) without reading whole tensors.
    """
    saved = {id(param) for model, _ in parts.values() for param in model.parameters()}
    fingerprints: dict[str, str] = {}
    for name, (model, _) in parts.items():
        unregistered = getattr(model, "unregistered_modules", None)
        if not callable(unregistered):
            continue
        digest = hashlib.sha256()
        count = 0
        for module in unregistered():
            for key, tensor in module.named_parameters():
                if id(tensor) in saved or isinstance(tensor, DTensor):
                    continue  # a DTensor: each process holds another shard, and every process checks
                flat = tensor.detach().reshape(-1)
                sample = flat[:: max(1, flat.numel() // 64)][:64].to(device="cpu", dtype=torch.float64)
                digest.update(f"{key}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
                digest.update(sample.numpy().tobytes())
                count += 1
        if count:
            fingerprints[name] = digest.hexdigest()
    return fingerprints


def _state_dicts(parts: Mapping[str, tuple[torch.nn.Module, torch.optim.Optimizer]]) -> dict[str, Any]:
    from torch.distributed.checkpoint.state_dict import get_state_dict

    states: dict[str, Any] = {}
    for name, (model, optimizer) in parts.items():
        states[f"{name}.model"], states[f"{name}.optimizer"] = get_state_dict(model, optimizer)
    return states


def write_rank(directory: Path, rank: int, state: dict[str, Any]) -> None:
    """Write one process's RNG and extra state."""
    write_torch(directory / rank_file(rank), state)


def write_trainer(directory: Path, state: dict[str, Any], config_yaml: str) -> None:
    """Write the step, scheduler and scaler state and the config (main process)."""
    write_torch(directory / TRAINER, state)
    write_text(directory / CONFIG, config_yaml)


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    """Write meta.json, the last file of a checkpoint before its manifest (main process)."""
    write_text(directory / META, json.dumps({"format": FORMAT_VERSION, **meta}, indent=2) + "\n")


def commit(temporary: Path, output_dir: Path, step: int) -> Path:
    """Make a fully written temporary checkpoint visible under its final name (main process)."""
    fsync_tree(temporary)
    root = output_dir / CHECKPOINTS
    final = root / checkpoint_name(step)
    trash = root / f"{TRASH_PREFIX}{final.name}-{os.getpid()}"
    if final.exists():  # the same step saved twice: the new one wins
        os.replace(final, trash)
    os.replace(temporary, final)
    fsync_dir(root)
    remove_tree(trash)
    return final


def prune(output_dir: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest checkpoints (``keep == 0`` keeps all; main process)."""
    if keep == 0:
        return
    root = output_dir / CHECKPOINTS
    for _, path in list_checkpoints(output_dir)[:-keep]:
        trash = root / f"{TRASH_PREFIX}{path.name}-{os.getpid()}"
        os.replace(path, trash)  # never leaves a half-deleted step-* behind
        fsync_dir(root)
        remove_tree(trash)


def read_meta(path: Path) -> dict[str, Any]:
    """Check a checkpoint has all its parts and return its meta.json."""
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        meta: dict[str, Any] = json.loads((path / META).read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise CheckpointError(f"checkpoint {path} is incomplete: no {META}") from err
    except (OSError, ValueError) as err:
        raise CheckpointError(f"checkpoint {path} has an unreadable {META}: {err}") from err
    if meta.get("format") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format {meta.get('format')!r}, expected {FORMAT_VERSION}"
        )
    for part in (TRAINER, f"{STATE}/.metadata"):
        if not (path / part).is_file():
            raise CheckpointError(f"checkpoint {path} is incomplete: no {part}")
    return meta


def load_state(
    path: Path, parts: Mapping[str, tuple[torch.nn.Module, torch.optim.Optimizer]], meta: dict[str, Any]
) -> None:
    """Load every model and optimizer in place from ``path/state``. Collective: every rank calls it.

    Raises:
        CheckpointError: the checkpoint holds other models than ``parts`` names, or cannot be read.
    """
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    saved = meta.get("models")
    if saved is not None and sorted(saved) != sorted(parts):
        raise CheckpointError(
            f"checkpoint {path} holds the models {sorted(saved)}, this run trains {sorted(parts)}"
        )
    fingerprints, ours = meta.get("unsaved_weights") or {}, unsaved_fingerprints(parts)
    for name in parts:
        if name in fingerprints and ours.get(name) != fingerprints[name]:
            raise CheckpointError(
                f"checkpoint {path} holds model {name!r}'s own weights (adapters) but not the base model "
                "they were trained on, and this run's base is another one: resume with the base model "
                "named in the checkpoint's config.yaml"
            )
    states = _state_dicts(parts)
    for name in parts:
        misfit = _misfit(path, name, states[f"{name}.model"])
        if misfit is not None:
            raise CheckpointError(
                f"checkpoint {path} does not fit this run's model {name!r}: {misfit}; it was saved "
                "by a run of another model, other policies (shared, per_agent, lora) or other adapters"
            )
    try:
        # Loads in place into the tensors of the state dicts.
        with _single_process_quiet():
            dcp.load(
                states, storage_reader=dcp.FileSystemReader(path / STATE), no_dist=not _has_process_group()
            )
        for name, (model, optimizer) in parts.items():
            set_state_dict(
                model,
                optimizer,
                model_state_dict=states[f"{name}.model"],
                optim_state_dict=states[f"{name}.optimizer"],
            )
    except (Exception, dcp.api.CheckpointException) as err:  # DCP's own error is a BaseException
        raise CheckpointError(f"checkpoint {path} could not be loaded: {type(err).__name__}: {err}") from err
    if not meta.get("optimizer_has_state", True):
        for _, optimizer in parts.values():
            optimizer.state.clear()


def _misfit(path: Path, name: str, model_state: Mapping[str, Any]) -> str | None:
    """How the weights saved for model ``name`` differ from ``model_state`` (names, then shapes),
    or None when they fit. Read from DCP's metadata, so that a mismatch is named before loading
    rather than surfacing as DCP's "Missing key" or size error wrapped in a traceback."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    try:
        saved = dcp.FileSystemReader(path / STATE).read_metadata().state_dict_metadata
    except Exception:  # an unreadable file: loading reports it
        return None
    prefix = f"{name}.model."
    wanted = dict(_flat(model_state, prefix))
    stored = {key for key in saved if key.startswith(prefix)}
    missing, extra = sorted(set(wanted) - stored), sorted(stored - set(wanted))
    if missing or extra:
        said = []
        if missing:
            said.append(
                f"{len(missing)} of its weights are not in the checkpoint ({missing[0][len(prefix) :]!r}, ...)"
            )
        if extra:
            said.append(f"{len(extra)} saved weights are not in it ({extra[0][len(prefix) :]!r}, ...)")
        return " and ".join(said)
    for key, value in wanted.items():
        meta = saved[key]
        if not (isinstance(meta, TensorStorageMetadata) and isinstance(value, torch.Tensor)):
            continue  # bytes (non-tensor values) have no shape to compare
        if tuple(meta.size) != tuple(value.shape):
            return f"{key[len(prefix) :]} is {tuple(meta.size)} in the checkpoint, {tuple(value.shape)} here"
    return None


def _flat(state: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    """Keys of a nested state dict as DCP writes them: the path of names joined by dots."""
    for key, value in state.items():
        if isinstance(value, Mapping):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def load_torch(path: Path, checkpoint: Path) -> Any:
    """``torch.load`` a checkpoint file (weights only: no arbitrary code), naming the checkpoint on failure."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint {checkpoint} is incomplete: no {path.name}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"checkpoint {checkpoint} has an unreadable {path.name}: {err}") from err


@contextlib.contextmanager
def _single_process_quiet() -> Iterator[None]:
    """Silence DCP's warning that a run without a process group is a single process: it is meant."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="torch.distributed is disabled, unavailable or uninitialized"
        )
        yield


def _has_process_group() -> bool:
    """Whether DCP can coordinate through a process group (else each call is a one-process save/load)."""
    return torch.distributed.is_available() and torch.distributed.is_initialized()
