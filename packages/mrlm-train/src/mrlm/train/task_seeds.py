"""Where task seeds come from, kept apart so evaluation never plays a task training drew.

A task is an env and a seed (``reset(seed=s)`` deals the same task every time). Training runs draw
theirs from :func:`training_seed_base` on, one per task; demonstrations written for a warm-up start at
:data:`DEMO_SEED_BASE`; evaluations (``mrlm-train eval``, the quickstarts, self-play win rates) start
at :data:`EVAL_SEED_BASE`. A run with ``run.seed`` below 1000 that draws fewer than a million tasks
stays below the evaluation seeds (below 500, below the demonstrations' too).
"""

from __future__ import annotations

SEEDS_PER_RUN_SEED = 1_000_000
"""Run seed ``s`` draws its training tasks from ``s * SEEDS_PER_RUN_SEED`` on."""
DEMO_SEED_BASE = 500_000_000
"""The first seed of the quickstarts' demonstrations."""
EVAL_SEED_BASE = 1_000_000_000
"""The first evaluation seed."""


def training_seed_base(run_seed: int) -> int:
    """The first task seed of a training run with ``run.seed == run_seed``."""
    return run_seed * SEEDS_PER_RUN_SEED
