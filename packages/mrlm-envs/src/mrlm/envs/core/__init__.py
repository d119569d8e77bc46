"""Building blocks for text environments: spaces and base classes for both APIs."""

from mrlm.envs.core.multi_agent import Outcome, TextAECEnv, TextParallelEnv
from mrlm.envs.core.spaces import TextSpace, text_observation_space
from mrlm.envs.core.text_env import Feedback, TextEnv

__all__ = [
    "Feedback",
    "Outcome",
    "TextAECEnv",
    "TextEnv",
    "TextParallelEnv",
    "TextSpace",
    "text_observation_space",
]
