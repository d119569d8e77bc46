"""Evaluating a model on env tasks, and collecting its trajectories.

:func:`play` plays each task seed of a :class:`PlayConfig` a number of times with one model, or one
model per agent of a multi-agent env; ``mrlm-train eval`` scores the episodes with
:func:`summarise` (mean reward, success rate, pass@k by :func:`pass_at_k`, per env and per agent)
and ``mrlm-train collect`` writes them for ``mrlm-train sft``. See ``docs/evaluation.md``.
"""

from mrlm.train.evaluation.config import EVAL_SEED_BASE, EnvSpec, PlayConfig, describe_seeds
from mrlm.train.evaluation.passk import mean_pass_at_k, pass_at_k, reported_ks
from mrlm.train.evaluation.play import (
    DeviceError,
    Played,
    Players,
    load_players,
    play,
    play_episodes,
    probe_env,
)
from mrlm.train.evaluation.report import (
    Outcome,
    Report,
    Score,
    episode_outcomes,
    format_table,
    save_episodes,
    score,
    succeeded,
    summarise,
    summary_dict,
)
from mrlm.train.rollout.errors import EnvFailedError

__all__ = [
    "EVAL_SEED_BASE",
    "DeviceError",
    "EnvFailedError",
    "EnvSpec",
    "Outcome",
    "PlayConfig",
    "Played",
    "Players",
    "Report",
    "Score",
    "describe_seeds",
    "episode_outcomes",
    "format_table",
    "load_players",
    "mean_pass_at_k",
    "pass_at_k",
    "play",
    "play_episodes",
    "probe_env",
    "reported_ks",
    "save_episodes",
    "score",
    "succeeded",
    "summarise",
    "summary_dict",
]
