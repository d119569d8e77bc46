"""mrlm.envs: text environments for LLM agents as Gymnasium and PettingZoo envs.

Importing this package registers every built-in env id (``gymnasium.make("mrlm/Math-v0")``,
``pettingzoo.make("parallel", ...)`` for the multi-agent ones). :func:`make` builds either kind.
"""

from mrlm.envs._builtin import register_builtin_envs
from mrlm.envs.core import (
    Feedback,
    Game,
    GameAECEnv,
    GameParallelEnv,
    Outcome,
    TextAECEnv,
    TextEnv,
    TextParallelEnv,
    TextSpace,
    play_in_turn,
    text_observation_space,
)
from mrlm.envs.dataset_task import DatasetTaskEnv
from mrlm.envs.registry import (
    EnvArgumentError,
    EnvEntry,
    EnvKind,
    UnknownEnvError,
    env_entry,
    list_envs,
    make,
    register_env,
)

__version__ = "0.1.0"

register_builtin_envs()

__all__ = [
    "DatasetTaskEnv",
    "EnvArgumentError",
    "EnvEntry",
    "EnvKind",
    "Feedback",
    "Game",
    "GameAECEnv",
    "GameParallelEnv",
    "Outcome",
    "TextAECEnv",
    "TextEnv",
    "TextParallelEnv",
    "TextSpace",
    "UnknownEnvError",
    "env_entry",
    "list_envs",
    "make",
    "play_in_turn",
    "register_env",
    "text_observation_space",
]
