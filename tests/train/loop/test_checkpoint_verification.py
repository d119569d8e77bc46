"""Checkpoint verification: nothing of a checkpoint that changed after saving is loaded."""

from __future__ import annotations

import json
import os
import pickle
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.loop import CheckpointError
from mrlm.train.loop.manifest import KEY_VARIABLE, MANIFEST, TRUST_VARIABLE, digest, seal
from tests.train.loop.helpers import fixed_batch, lm_step, parameters_of, session_for

VOCAB = 512
WEIGHTS = "state/__0_0.distcp"


class _Touch:
    """Unpickling this creates ``marker``: stands for any code a crafted pickle could run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, tokenizer) -> tuple[Path, dict[str, torch.Tensor]]:
    """A run with one step and its checkpoint, and the parameters it saved; copy before damaging."""
    from mrlm.train.tiny import build_tiny_model

    model = build_tiny_model(tokenizer)
    out = tmp_path_factory.mktemp("saved")
    with session_for(model, out) as session:
        lm_step(session, fixed_batch(VOCAB))
        path = session.save_checkpoint()
    return path, parameters_of(model)


@pytest.fixture
def run(tmp_path: Path, saved: tuple[Path, dict[str, torch.Tensor]]) -> Path:
    """A fresh copy of the saved run's output directory."""
    shutil.copytree(saved[0].parent.parent, tmp_path / "run")
    return tmp_path / "run"


def _checkpoint(run: Path) -> Path:
    return run / "checkpoints" / "step-000001"


def _resume(run: Path, tokenizer) -> tuple[int, dict[str, torch.Tensor]]:
    from mrlm.train.tiny import build_tiny_model

    model = build_tiny_model(tokenizer, seed=99)
    with session_for(model, run, run={"resume": "latest"}) as session:
        session.restore()
        return session.step, parameters_of(model)


def test_manifest_lists_every_file_with_its_digest(run: Path) -> None:
    path = _checkpoint(run)
    files = json.loads((path / MANIFEST).read_text())["files"]
    on_disk = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    assert sorted(files) == [name for name in on_disk if name != MANIFEST]
    assert {"state/.metadata", WEIGHTS, "trainer.pt", "meta.json", "rank-00000.pt"} <= set(files)
    for name, entry in files.items():
        assert digest(path / name) == (entry["size"], entry["sha256"])


def test_an_intact_checkpoint_resumes(
    run: Path, tokenizer, saved: tuple[Path, dict[str, torch.Tensor]]
) -> None:
    step, parameters = _resume(run, tokenizer)
    assert step == 1
    assert all(torch.equal(parameters[name], saved[1][name]) for name in saved[1])


def test_a_crafted_metadata_pickle_is_refused_before_it_is_unpickled(
    run: Path, tmp_path: Path, tokenizer
) -> None:
    marker = tmp_path / "code-ran"
    payload = pickle.dumps(_Touch(marker))
    pickle.loads(payload)  # the payload does run code when unpickled
    assert marker.exists()
    marker.unlink()

    path = _checkpoint(run)
    (path / "state" / ".metadata").write_bytes(payload)
    with pytest.raises(CheckpointError) as info:
        _resume(run, tokenizer)
    message = str(info.value)
    assert message.startswith(f"checkpoint {path} failed verification: state/.metadata does not match")
    assert "\n" not in message
    assert not marker.exists()


def _flip_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: _flip_one_byte(p / WEIGHTS), rf"{WEIGHTS} does not match {MANIFEST} \(SHA-256 differs\)"),
        (
            lambda p: (p / "trainer.pt").write_bytes(b"x"),
            r"trainer.pt does not match manifest.json \(size 1,",
        ),
        (lambda p: (p / "rank-00000.pt").unlink(), "rank-00000.pt is listed in manifest.json but missing"),
        (lambda p: (p / "state" / "extra.bin").write_bytes(b""), "state/extra.bin is not listed in"),
        (lambda p: (p / "notes").symlink_to("/etc/hostname"), "holds notes, which is not a regular file"),
        (lambda p: (p / MANIFEST).write_text("{}"), "unreadable manifest.json"),
    ],
    ids=["changed-weights", "changed-size", "missing", "extra", "symlink", "bad-manifest"],
)
def test_a_changed_checkpoint_is_refused_naming_the_file(
    run: Path, tokenizer, damage: Callable[[Path], None], message: str
) -> None:
    path = _checkpoint(run)
    damage(path)
    with pytest.raises(CheckpointError, match=message) as info:
        _resume(run, tokenizer)
    assert str(path) in str(info.value)


def test_a_checkpoint_without_manifest_needs_an_explicit_opt_in(
    run: Path, tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (_checkpoint(run) / MANIFEST).unlink()
    with pytest.raises(CheckpointError, match=f"has no manifest.json .* set {TRUST_VARIABLE}=1"):
        _resume(run, tokenizer)
    monkeypatch.setenv(TRUST_VARIABLE, "1")
    with pytest.warns(UserWarning, match="loading it unverified"):
        assert _resume(run, tokenizer)[0] == 1


def test_with_a_key_a_rewritten_manifest_is_refused(
    run: Path, tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _checkpoint(run)
    monkeypatch.setenv(KEY_VARIABLE, "secret")
    with pytest.raises(CheckpointError, match="carries no HMAC"):  # saved without the key
        _resume(run, tokenizer)
    seal(path, 0, 1)
    assert _resume(run, tokenizer)[0] == 1

    # Someone without the key changes a file and rewrites the manifest to match, under their own key.
    _flip_one_byte(path / WEIGHTS)
    monkeypatch.setenv(KEY_VARIABLE, "guessed")
    seal(path, 0, 1)
    monkeypatch.setenv(KEY_VARIABLE, "secret")
    with pytest.raises(CheckpointError, match=r"HMAC of manifest\.json does not match"):
        _resume(run, tokenizer)
