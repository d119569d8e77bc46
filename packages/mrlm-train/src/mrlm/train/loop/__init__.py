"""The training loop every algorithm shares: process set-up, optimisation, checkpoints, metrics.

* :class:`TrainingSession` owns one run (see :mod:`mrlm.train.loop.session` for the contract);
* :class:`RunConfig`, :class:`OptimConfig`, :class:`DistributedConfig` are its settings;
* :class:`NonFiniteError`, :class:`CheckpointError`, :class:`DistributedSetupError` its errors;
* :func:`latest_checkpoint` finds a run's newest checkpoint; :func:`plot_metrics` (in
  :mod:`mrlm.train.loop.plots`, needs matplotlib) draws its curves.
"""

from __future__ import annotations

from mrlm.train.loop.checkpoint import latest_checkpoint
from mrlm.train.loop.config import DistributedConfig, OptimConfig, RunConfig
from mrlm.train.loop.errors import CheckpointError, DistributedSetupError, NonFiniteError
from mrlm.train.loop.session import TrainingSession

__all__ = [
    "CheckpointError",
    "DistributedConfig",
    "DistributedSetupError",
    "NonFiniteError",
    "OptimConfig",
    "RunConfig",
    "TrainingSession",
    "latest_checkpoint",
]
