"""Training, demonstration and evaluation task seeds stay apart."""

from __future__ import annotations

from mrlm.train.evaluation import EVAL_SEED_BASE as EVAL_DEFAULT
from mrlm.train.self_play.win_rate import eval_seeds
from mrlm.train.task_seeds import DEMO_SEED_BASE, EVAL_SEED_BASE, SEEDS_PER_RUN_SEED, training_seed_base


def test_ranges_do_not_overlap() -> None:
    last_training = training_seed_base(999) + SEEDS_PER_RUN_SEED - 1  # run seed 999, a million tasks
    assert last_training < EVAL_SEED_BASE
    assert training_seed_base(499) + SEEDS_PER_RUN_SEED - 1 < DEMO_SEED_BASE < EVAL_SEED_BASE


def test_every_evaluation_starts_at_the_same_seed() -> None:
    assert EVAL_DEFAULT == EVAL_SEED_BASE
    assert eval_seeds(3) == [EVAL_SEED_BASE, EVAL_SEED_BASE + 1, EVAL_SEED_BASE + 2]
