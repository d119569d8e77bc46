"""Preference optimisation's parts: losses, preference data, batches and pairs from env rollouts."""

from mrlm.train.dpo.batch import PairBatch, collate_pairs
from mrlm.train.dpo.data import (
    PreferenceDataError,
    PreferencePair,
    PreferenceReport,
    load_preference_pairs,
    preference_pair,
    split_implicit_prompt,
)
from mrlm.train.dpo.losses import LOSSES, LossType, PairScores, pair_scores, preference_loss

__all__ = [
    "LOSSES",
    "LossType",
    "PairBatch",
    "PairScores",
    "PreferenceDataError",
    "PreferencePair",
    "PreferenceReport",
    "collate_pairs",
    "load_preference_pairs",
    "pair_scores",
    "preference_loss",
    "preference_pair",
    "split_implicit_prompt",
]
