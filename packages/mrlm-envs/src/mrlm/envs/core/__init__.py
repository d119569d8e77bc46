"""Building blocks for text environments: spaces, base classes for both APIs, and multi-agent games."""

from mrlm.envs.core.game import Game, play_in_turn
from mrlm.envs.core.game_env import GameAECEnv, GameParallelEnv
from mrlm.envs.core.multi_agent import Outcome, TextAECEnv, TextParallelEnv
from mrlm.envs.core.spaces import TextSpace, text_observation_space
from mrlm.envs.core.text_env import Feedback, TextEnv

__all__ = [
    "Feedback",
    "Game",
    "GameAECEnv",
    "GameParallelEnv",
    "Outcome",
    "TextAECEnv",
    "TextEnv",
    "TextParallelEnv",
    "TextSpace",
    "play_in_turn",
    "text_observation_space",
]
