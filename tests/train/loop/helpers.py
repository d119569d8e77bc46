"""Small builders shared by the loop tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession


def session_for(
    model: torch.nn.Module,
    output_dir: Path,
    *,
    run: dict[str, Any] | None = None,
    optim: dict[str, Any] | None = None,
    dist: dict[str, Any] | None = None,
    **kwargs: Any,
) -> TrainingSession:
    """A session with quiet defaults (no progress bar, lr 1e-3) and the given overrides."""
    run_config = RunConfig(**{"output_dir": str(output_dir), "progress_bar": False, **(run or {})})
    optim_config = OptimConfig(**{"learning_rate": 1e-3, **(optim or {})})
    return TrainingSession(
        model, run=run_config, optim=optim_config, dist=DistributedConfig(**(dist or {})), **kwargs
    )


def fixed_batch(vocab_size: int, rows: int = 4, length: int = 12, seed: int = 0) -> torch.Tensor:
    """A synthetic next-token batch of plain (non-special) token ids."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab_size, (rows, length), generator=generator)


def lm_step(session: TrainingSession, ids: torch.Tensor) -> float:
    """One optimizer step of next-token loss on ``ids``; returns the loss."""
    ids = ids.to(session.device)
    loss = session.model(input_ids=ids, labels=ids).loss
    session.backward(loss)
    session.optimizer_step()
    return float(loss.detach())


def parameters_of(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of every parameter."""
    return {name: param.detach().clone() for name, param in model.named_parameters()}


def tree_digest(path: Path) -> dict[str, str]:
    """SHA-256 of every file under ``path``, by relative path."""
    return {
        str(file.relative_to(path)): hashlib.sha256(file.read_bytes()).hexdigest()
        for file in sorted(path.rglob("*"))
        if file.is_file()
    }
