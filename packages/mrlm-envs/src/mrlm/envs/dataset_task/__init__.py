"""Multi-agent tasks made from dataset records and plain functions (the shape of a CoMLRL run).

:class:`DatasetTaskEnv` is the env (not registered under an id: it takes functions);
:func:`comlrl_reward` and :func:`comlrl_transition` adapt CoMLRL's reward and ``external_transition``
functions to it.
"""

from mrlm.envs.dataset_task.comlrl import comlrl_reward, comlrl_transition
from mrlm.envs.dataset_task.env import DatasetTaskEnv, Formatter, RewardFn, TaskFunctionError, TransitionFn

__all__ = [
    "DatasetTaskEnv",
    "Formatter",
    "RewardFn",
    "TaskFunctionError",
    "TransitionFn",
    "comlrl_reward",
    "comlrl_transition",
]
