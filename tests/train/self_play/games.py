"""A two-agent game with outcomes known by hand, for win-rate and opponent tests.

``Longer`` (parallel, one round): ``north`` and ``south`` each say something; the longer reply (in
characters) gets +1 and the shorter -1, equal lengths 0 each. With ``north_wins=True`` the replies do
not matter: north gets +1 and south -1 in every game. Sampled replies of a tiny model differ in
length, so training on it has signal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from mrlm.envs import Outcome, TextParallelEnv


class Longer(TextParallelEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi"],
        "name": "longer",
        "is_parallelizable": True,
    }

    def __init__(self, north_wins: bool = False) -> None:
        super().__init__(["north", "south"])
        self.north_wins = north_wins

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        return {agent: {"system_prompt": "Say something."} for agent in self.agents}

    def _observe(self, agent: str) -> str:
        return f"You are {agent}. The longer reply wins."

    def _act(self, actions: Mapping[str, str]) -> Outcome:
        north, south = (len(actions[agent]) for agent in ("north", "south"))
        sign = 1.0 if self.north_wins else float(np.sign(north - south))
        return Outcome(rewards={"north": sign, "south": -sign}, done=True)
