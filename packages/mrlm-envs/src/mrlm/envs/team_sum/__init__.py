"""Team sums: each member answers its own small sum, and the team's answer is their total (``mrlm/TeamSum-v0``).

:mod:`~mrlm.envs.team_sum.game` holds the rules (parts, reading a reply's value, the team's verdict)
free of any RL API; :mod:`~mrlm.envs.team_sum.env` its two PettingZoo forms, which ``env()`` and
``parallel_env()`` build (a PettingZoo env module: ``max_cycles_test(mrlm.envs.team_sum)``). Here
``env`` is the factory; ``importlib.import_module("mrlm.envs.team_sum.env")`` is the submodule.
"""

from mrlm.envs.team_sum.env import TeamSumAECEnv, TeamSumEnv, env, parallel_env
from mrlm.envs.team_sum.game import (
    AGENT_NAMES,
    OPERATIONS,
    Part,
    TeamSumGame,
    TeamSumRules,
    Verdict,
    draw_part,
    judge,
    parse_value,
    system_prompt,
)

__all__ = [
    "AGENT_NAMES",
    "OPERATIONS",
    "Part",
    "TeamSumAECEnv",
    "TeamSumEnv",
    "TeamSumGame",
    "TeamSumRules",
    "Verdict",
    "draw_part",
    "env",
    "judge",
    "parallel_env",
    "parse_value",
    "system_prompt",
]
