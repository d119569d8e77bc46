"""Team sums: each member answers its own small sum, and the team's answer is their total (``mrlm/TeamSum-v0``).

:mod:`~mrlm.envs.team_sum.game` holds the rules (parts, reading a reply's value, the team's verdict)
free of any RL API; :mod:`~mrlm.envs.team_sum.env` the PettingZoo envs, with the module-level
factories ``env()`` and ``parallel_env()`` that PettingZoo's tests expect. The factories are not
re-exported here, where the name ``env`` would hide the submodule of the same name.
"""

from mrlm.envs.team_sum.env import TeamSumAECEnv, TeamSumEnv
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
    "judge",
    "parse_value",
    "system_prompt",
]
