"""The rules of a multi-agent text game, apart from any RL API.

A :class:`Game` says who plays, what each agent sees, and what a move does;
:class:`~mrlm.envs.core.game_env.GameAECEnv` and :class:`~mrlm.envs.core.game_env.GameParallelEnv`
turn one into PettingZoo's turn-based and simultaneous forms, keeping the API's bookkeeping (spaces,
flags, accumulated rewards, ``max_cycles``, the transcript) out of the rules. A game object lives as
long as its env: :meth:`Game.start` begins each episode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from mrlm.envs.core.multi_agent import Outcome


class Game(Protocol):
    """One multi-agent text game.

    The env calls :meth:`start` on every reset, then :meth:`move` once per turn (turn-based form) or
    :meth:`play` once per step (simultaneous form), and :meth:`observe` whenever an agent looks. An
    episode ends when an :class:`~mrlm.envs.core.multi_agent.Outcome` says ``done`` (or at the env's
    ``max_cycles``).
    """

    @property
    def agents(self) -> Sequence[str]:
        """The agents, in turn order; the same for every episode."""
        ...

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> Mapping[str, Mapping[str, Any]]:
        """Begin an episode; return each agent's reset ``info``.

        ``rng`` is the env's seeded generator (the only source of randomness a game may use), ``seed``
        the seed given to ``reset`` (None when unseeded; see
        :func:`~mrlm.envs.core.task_choice.choose_task`) and ``options`` its options, whose unknown keys
        a game ignores.
        """
        ...

    def observe(self, agent: str) -> str:
        """The text ``agent`` sees now."""
        ...

    def move(self, agent: str, action: str) -> Outcome:
        """Apply ``agent``'s reply in the turn-based form, where agents reply one at a time in order."""
        ...

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """Apply one reply of every live agent in the simultaneous form (:func:`play_in_turn` when a
        joint move is the same as the moves one after another)."""
        ...

    def render(self) -> str | None:
        """The game's own picture of the episode; None to show the env's transcript of replies."""
        ...


def play_in_turn(game: Game, actions: Mapping[str, str]) -> Outcome:
    """A joint move as each agent's :meth:`Game.move`, in the game's agent order, merged into one.

    Rewards add up, each agent's infos are merged (later keys win), notes follow one another, and the
    joint move is done when a move is. Right for a game whose agents cannot see each other's replies
    of the same round before they all have replied.
    """
    rewards: dict[str, float] = {}
    infos: dict[str, dict[str, Any]] = {}
    notes: list[tuple[str, str]] = []
    done = False
    for agent in game.agents:
        if agent not in actions:
            continue
        outcome = game.move(agent, actions[agent])
        for name, reward in outcome.rewards.items():
            rewards[name] = rewards.get(name, 0.0) + reward
        for name, info in outcome.infos.items():
            infos.setdefault(name, {}).update(info)
        notes.extend(outcome.notes)
        done = done or outcome.done
    return Outcome(rewards=rewards, done=done, infos=infos, notes=notes)


DraftT = TypeVar("DraftT")


@dataclass
class PendingRound(Generic[DraftT]):
    """The round in progress in the turn-based form of a game whose rounds are joint moves.

    Each reply is kept with its draft (what it adds, shown to the teammates who reply after it) until
    the last agent of the round has replied; the game then plays the round as a whole, as the
    simultaneous form does, and :meth:`close` starts the next one. Until then every agent's ``info``
    stays that of the last round played (``last_infos``; the reset infos before the first).
    """

    replies: dict[str, str] = field(default_factory=dict)
    drafts: dict[str, DraftT] = field(default_factory=dict)
    last_infos: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def add(self, agent: str, reply: str, draft: DraftT) -> None:
        self.replies[agent] = reply
        self.drafts[agent] = draft

    def drafts_for(self, agent: str) -> dict[str, DraftT]:
        """The drafts ``agent``'s teammates have written this round."""
        return {other: draft for other, draft in self.drafts.items() if other != agent}

    def close(self, infos: Mapping[str, Mapping[str, Any]]) -> None:
        """Forget this round's replies; ``infos`` are those of the round just played (or the reset)."""
        self.replies, self.drafts, self.last_infos = {}, {}, infos
