"""Playing envs with the policy and recording what the trainer needs.

:class:`RolloutEngine` plays groups of episodes with a generator and returns :class:`Trajectory`
records (tokens, generation mask, sampling log-probs, turn rewards); :class:`Conversation` builds a
chat's tokens incrementally; :func:`collate` pads trajectories into tensors for the losses.
"""

from mrlm.train.rollout.batch import RolloutBatch, collate
from mrlm.train.rollout.conversation import Conversation, TemplatePrefixError
from mrlm.train.rollout.engine import RolloutEngine
from mrlm.train.rollout.errors import EnvOutputError, RewardOverflowError
from mrlm.train.rollout.trajectory import Trajectory, load_jsonl, save_jsonl

__all__ = [
    "Conversation",
    "EnvOutputError",
    "RewardOverflowError",
    "RolloutBatch",
    "RolloutEngine",
    "TemplatePrefixError",
    "Trajectory",
    "collate",
    "load_jsonl",
    "save_jsonl",
]
