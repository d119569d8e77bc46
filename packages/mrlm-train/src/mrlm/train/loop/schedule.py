"""Learning-rate schedules: linear warm-up, then constant, linear or cosine decay.

With ``W = warmup_steps``, ``T = max_steps`` and ``s`` the number of optimizer steps already done
(0 for the first update), the update uses ``learning_rate * lr_factor(s)`` where

* ``s < W``: ``(s + 1) / W``, so the first update already moves (never a wasted step at lr 0) and
  update ``W`` reaches the peak;
* otherwise, with ``p = min(1, (s - W) / (T - W))`` (``p = 1`` when ``T <= W``):
  ``constant`` 1, ``linear`` ``1 - p``, ``cosine`` ``(1 + cos(pi * p)) / 2``.

So decay starts at the peak on update ``W + 1`` and would reach 0 at update ``T + 1``, which the run
never takes: every update has a positive learning rate.
"""

from __future__ import annotations

import math

import torch

from mrlm.train.loop.config import OptimConfig


def lr_factor(step: int, *, schedule: str, warmup_steps: int, max_steps: int) -> float:
    """The multiplier of the peak learning rate for the update after ``step`` steps (see module doc)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    decay_steps = max_steps - warmup_steps
    progress = 1.0 if decay_steps <= 0 else min(1.0, (step - warmup_steps) / decay_steps)
    if schedule == "constant":
        return 1.0
    if schedule == "linear":
        return 1.0 - progress
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown lr_schedule {schedule!r}")


def build_scheduler(
    optimizer: torch.optim.Optimizer, config: OptimConfig, max_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A scheduler to step once per optimizer step; its state dict holds only plain numbers."""

    def factor(step: int) -> float:
        return lr_factor(
            step, schedule=config.lr_schedule, warmup_steps=config.warmup_steps, max_steps=max_steps
        )

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
