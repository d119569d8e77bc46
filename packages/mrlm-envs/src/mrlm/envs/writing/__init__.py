"""Cooperative writing: agents write complementary parts of one text (``mrlm/Writing-v0``).

The pieces, each usable alone: :mod:`~mrlm.envs.writing.text` (words and tokens),
:mod:`~mrlm.envs.writing.metrics` (length bands, distinct-n, function words, overlap, copying,
coherence), :mod:`~mrlm.envs.writing.rouge` (ROUGE-1/2/L), :mod:`~mrlm.envs.writing.tasks` and
:mod:`~mrlm.envs.writing.records` (what is written, from built-in texts or dataset records),
:mod:`~mrlm.envs.writing.reward` (pluggable rewards and the default one),
:mod:`~mrlm.envs.writing.game` (the rules, free of any RL API) and :mod:`~mrlm.envs.writing.env`
(its two PettingZoo forms), which ``env()`` and ``parallel_env()`` build (a PettingZoo env module:
``max_cycles_test(mrlm.envs.writing)``). Here ``env`` is the factory;
``importlib.import_module("mrlm.envs.writing.env")`` is the submodule.
"""

from mrlm.envs.writing.env import WritingAECEnv, WritingEnv, env, parallel_env
from mrlm.envs.writing.game import WritingGame
from mrlm.envs.writing.records import load_records, parse_tldr_prompt
from mrlm.envs.writing.reward import DEFAULT_WEIGHTS, RewardFn, Score, WritingReward, as_score
from mrlm.envs.writing.rouge import RougeScore, lcs_length, rouge_l, rouge_n, rouge_scores
from mrlm.envs.writing.tasks import AGENTS, TASK_KINDS, Role, TaskKind, WritingTask

__all__ = [
    "AGENTS",
    "DEFAULT_WEIGHTS",
    "TASK_KINDS",
    "RewardFn",
    "Role",
    "RougeScore",
    "Score",
    "TaskKind",
    "WritingAECEnv",
    "WritingEnv",
    "WritingGame",
    "WritingReward",
    "WritingTask",
    "as_score",
    "env",
    "lcs_length",
    "load_records",
    "parallel_env",
    "parse_tldr_prompt",
    "rouge_l",
    "rouge_n",
    "rouge_scores",
]
