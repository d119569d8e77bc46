"""Win rates of a policy against an opponent on a fixed set of tasks, from every seat.

The player takes each seat (agent) of the env in turn and plays every evaluation task (env seed)
once from it; the opponent plays every other seat. A game is a **win** when the player's total
reward exceeds each other seat's, a **loss** when some other seat's exceeds it, and a **tie**
otherwise (equal rewards, such as Debate-v0's 0 and 0 when the judge calls a draw). The win rate is
``wins / games``: a tie is not a win, so a policy against an exact copy of itself in a game where
every draw ties scores 0, and one that wins every game, 1.

Playing every seat is what makes the number fair in asymmetric games (PRO speaks first in a
debate): each task is won from both sides or it is not counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mrlm.train.generation.base import SamplingParams
from mrlm.train.rollout import Policy, RolloutEngine
from mrlm.train.rollout.envs import EnvFactory, EnvKind, env_factory
from mrlm.train.task_seeds import EVAL_SEED_BASE

PLAYER = "player"
OPPONENT = "opponent"


@dataclass(frozen=True)
class Record:
    """Outcomes of a player's games against one opponent (see the module docstring)."""

    wins: int = 0
    ties: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.ties + self.losses

    @property
    def win_rate(self) -> float:
        """``wins / games``; 0 without games."""
        return self.wins / self.games if self.games else 0.0

    def __add__(self, other: Record) -> Record:
        return Record(self.wins + other.wins, self.ties + other.ties, self.losses + other.losses)


def eval_seeds(count: int) -> list[int]:
    """The ``count`` fixed evaluation seeds."""
    return list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + count))


def play_record(
    env: str | EnvFactory,
    player: Policy,
    opponent: Policy,
    seeds: Sequence[int],
    *,
    sampling: SamplingParams,
    max_turns: int = 16,
    env_kwargs: Mapping[str, Any] | None = None,
    kind: EnvKind | None = None,
) -> Record:
    """Play ``player`` from every seat of ``env`` on each seed against ``opponent``; count the outcomes.

    ``2 * len(seeds)`` games in a two-agent env (none without seeds). ``sampling`` applies to both
    sides (greedy, ``temperature=0``, makes the record a deterministic function of the weights).

    Raises:
        ValueError: an episode in which only the player's seat has a row (the opponent never
            acted), which has no outcome.
    """
    make_env = env_factory(env, env_kwargs, kind)
    record = Record()
    if not seeds:
        return record
    for seat in _seats(make_env):
        engine = RolloutEngine(
            make_env,
            {PLAYER: player, OPPONENT: opponent},
            sampling=sampling,
            agent_policies=_seated(seat),
            max_turns=max_turns,
        )
        with engine:
            rows = engine.collect(list(seeds))
        totals: dict[int | None, dict[str | None, float]] = {}
        for row in rows:
            totals.setdefault(row.episode, {})[row.agent] = row.total_reward
        for episode in totals.values():
            record += _outcome(episode, seat)
    return record


def win_rate(
    env: str | EnvFactory,
    player: Policy,
    opponent: Policy,
    seeds: Sequence[int],
    *,
    sampling: SamplingParams,
    max_turns: int = 16,
    env_kwargs: Mapping[str, Any] | None = None,
    kind: EnvKind | None = None,
) -> float:
    """The share of the games of :func:`play_record` that ``player`` wins."""
    return play_record(
        env,
        player,
        opponent,
        seeds,
        sampling=sampling,
        max_turns=max_turns,
        env_kwargs=env_kwargs,
        kind=kind,
    ).win_rate


def _seated(seat: str) -> Callable[[str | None], str]:
    """The agent-to-policy map with the player in ``seat`` and the opponent everywhere else."""
    return lambda agent: PLAYER if agent == seat else OPPONENT


def _outcome(totals: Mapping[str | None, float], seat: str) -> Record:
    others = [total for agent, total in totals.items() if agent != seat]
    if seat not in totals or not others:
        raise ValueError(f"an episode without both the player's seat {seat!r} and an opponent: {totals}")
    mine, best = totals[seat], max(others)
    if mine > best:
        return Record(wins=1)
    if mine < best:
        return Record(losses=1)
    return Record(ties=1)


def _seats(make_env: EnvFactory) -> list[str]:
    env = make_env()
    try:
        agents = list(getattr(env, "possible_agents", None) or [])
    finally:
        env.close()
    if len(agents) < 2:
        raise ValueError("a win rate needs an env with at least two agents")
    return [str(agent) for agent in agents]
