"""Debate: PRO and CON debaters argue a motion over opening, rebuttal and closing rounds; a judge decides.

``env()`` and ``parallel_env()`` build the turn-based and simultaneous forms (so this package works as a
PettingZoo env module); ``mrlm.envs.make("mrlm/Debate-v0", kind="aec" | "parallel")`` does the same by
id. Judges share one interface, :class:`Judge`: :class:`RuleBasedJudge` (deterministic rules) and
:class:`ModelJudge` (any chat model, or an OpenAI-compatible endpoint through :class:`OpenAIChat`).
"""

from mrlm.envs.debate.chat_http import OpenAIChat
from mrlm.envs.debate.env import DebateEnv, DebateParallelEnv, env, parallel_env
from mrlm.envs.debate.game import REWARD_MODES, DebateGame, RewardMode
from mrlm.envs.debate.judging import Judge, JudgeError, Verdict
from mrlm.envs.debate.model_judge import ModelJudge, parse_scores
from mrlm.envs.debate.motions import MOTIONS
from mrlm.envs.debate.rule_judge import RuleBasedJudge, TurnScore
from mrlm.envs.debate.transcript import CON, PRO, Phase, Side, Turn

__all__ = [
    "CON",
    "MOTIONS",
    "PRO",
    "REWARD_MODES",
    "DebateEnv",
    "DebateGame",
    "DebateParallelEnv",
    "Judge",
    "JudgeError",
    "ModelJudge",
    "OpenAIChat",
    "Phase",
    "RewardMode",
    "RuleBasedJudge",
    "Side",
    "Turn",
    "TurnScore",
    "Verdict",
    "env",
    "parallel_env",
    "parse_scores",
]
