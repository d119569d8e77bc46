"""PettingZoo's two forms of any :class:`~mrlm.envs.core.game.Game`.

:class:`GameAECEnv` (agents reply one at a time) and :class:`GameParallelEnv` (every agent replies at
each step) hold one game and pass each API call to it; the bookkeeping is that of
:class:`~mrlm.envs.core.multi_agent.TextAECEnv` and :class:`~mrlm.envs.core.multi_agent.TextParallelEnv`.
Either can be used as is, ``GameParallelEnv(MyGame(), max_cycles=8)``, or subclassed by an env package
whose constructor builds the game from its own keyword arguments: a class that takes those arguments
once and calls ``super().__init__(game, ...)``, mixed into both forms, gives both public classes one
signature (see :mod:`mrlm.envs.team_sum.env`). :attr:`GameForm.simultaneous` tells that constructor
which form it builds, for games whose rules differ between them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from mrlm.envs.core.game import Game
from mrlm.envs.core.multi_agent import Outcome, TextAECEnv, TextParallelEnv, _TextAgents
from mrlm.envs.core.spaces import DEFAULT_MAX_ACTION_LENGTH, DEFAULT_MAX_OBSERVATION_LENGTH

GameT = TypeVar("GameT", bound=Game)


class GameForm(_TextAgents, Generic[GameT]):
    """What both forms do with their game: start it, observe it, render it.

    Args:
        game: the rules; its ``agents`` become the env's ``possible_agents``.
        max_cycles: rounds (AEC: each agent acting once; parallel: steps) after which the episode is
            truncated; None for none.
        render_mode: ``"ansi"`` or ``"human"``.
        max_observation_length: bound of the observation space, in characters.
        max_action_length: bound of the action space, in characters; longer replies are refused.
    """

    #: True in the simultaneous (parallel) form.
    simultaneous: ClassVar[bool]
    game: GameT

    def __init__(
        self,
        game: GameT,
        *,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH,
        max_action_length: int = DEFAULT_MAX_ACTION_LENGTH,
    ) -> None:
        self.game = game
        super().__init__(
            list(game.agents),
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_observation_length=max_observation_length,
            max_action_length=max_action_length,
        )

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        return self.game.start(rng, self._reset_seed, options)

    def _observe(self, agent: str) -> str:
        return self.game.observe(agent)

    def render(self) -> str | None:
        """The game's picture of the episode, or else the transcript of replies: returned in ``"ansi"``
        mode, printed in ``"human"`` mode (which returns None)."""
        text = self.game.render()
        if text is None:
            return super().render()
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None


class GameAECEnv(GameForm[GameT], TextAECEnv):
    """The turn-based form of a game: agents reply one at a time, in the game's agent order."""

    simultaneous: ClassVar[bool] = False

    def _act(self, agent: str, action: str) -> Outcome:
        return self.game.move(agent, action)


class GameParallelEnv(GameForm[GameT], TextParallelEnv):
    """The simultaneous form of a game: each step takes one reply from every live agent."""

    simultaneous: ClassVar[bool] = True

    def _act(self, actions: Mapping[str, str]) -> Outcome:
        return self.game.play(actions)


def cycles_bound_turns(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` for PettingZoo's ``env(max_cycles=n)`` convention: ``max_cycles`` given without
    ``max_turns`` lifts the game's own turn budget, so that ``max_cycles`` alone ends the episode."""
    if kwargs.get("max_cycles") is not None and "max_turns" not in kwargs:
        return {**kwargs, "max_turns": None}
    return kwargs


def check_turns(max_turns: int | None, max_cycles: int | None) -> int | None:
    """``max_turns``, a game's own turn budget; ValueError unless it is a positive int, or None with
    ``max_cycles`` given (or episodes that never succeed would never end)."""
    if max_turns is not None and (
        isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
    ):
        raise ValueError(f"max_turns must be a positive int or None, got {max_turns!r}")
    if max_turns is None and max_cycles is None:
        raise ValueError("max_turns=None needs max_cycles, or episodes that fail would never end")
    return max_turns
