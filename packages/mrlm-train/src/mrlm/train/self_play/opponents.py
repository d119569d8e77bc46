"""Rollouts of a learning policy against an opponent: the learner takes one seat per task.

Tasks are dealt to the env's seats (agents) in turn, over the whole run: the ``n``-th task the
learner is given is played from seat ``n mod len(seats)`` by every sample of its group, the
opponent playing every other seat. So within a step (and across steps, when a step has fewer tasks
than seats) each side is learned, and a group still holds one agent's rows of one task. Only the
learner's rows are returned: the opponent's are not trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mrlm.train.loop.errors import CheckpointError
from mrlm.train.rollout import Policy, RolloutEngine, Trajectory
from mrlm.train.rollout.engine import WITH_OPPONENT_POOL

#: Why a run with an opponent pool refuses a checkpoint saved without one.
NO_POOL = (
    "the checkpoint holds no opponent pool: it was saved by a run without --opponent-pool, this run "
    "has one; resume it without --opponent-pool"
)
#: Why a run without an opponent pool refuses a checkpoint saved with one (the rollout engine's
#: ``load_state_dict`` refuses it for the same reason).
WITH_POOL = WITH_OPPONENT_POOL


def pool_size_changed(saved: int, size: int) -> str:
    """Why a run refuses a checkpoint whose opponent pool held up to ``saved`` snapshots when its
    own holds up to ``size``: the pool it resumes would not be the one it saved."""
    return (
        f"the checkpoint's opponent pool holds up to {saved} snapshots, this run's --opponent-pool is "
        f"{size}; resume it with --opponent-pool {saved}"
    )


class OpponentRollout:
    """Collects groups of the learner's rows with ``opponent`` in the other seats.

    Args:
        engine_with: builds the engine from its policies and agent-to-policy map (the run's
            sampling, env and turn settings are the caller's).
        learner: the learning policy's name (its rows' ``policy``) and record.
        opponent: the opponent's record; its name in the engine is ``"opponent"``.
        seats: the agents the learner plays in turn.
    """

    OPPONENT = "opponent"

    def __init__(
        self,
        engine_with: Callable[[Mapping[str, Policy], Callable[[str | None], str]], RolloutEngine],
        learner: tuple[str, Policy],
        opponent: Policy,
        seats: Sequence[str],
    ) -> None:
        if not seats:
            raise ValueError("the learner needs at least one seat")
        self.learner = learner[0]
        if self.learner == self.OPPONENT:
            raise ValueError(f"the learner cannot be called {self.OPPONENT!r}")
        self.seats = list(seats)
        self.seat = self.seats[0]
        self.cursor = 0
        """Tasks dealt so far: the next one goes to seat ``cursor mod len(seats)``."""
        self.engine = engine_with({self.learner: learner[1], self.OPPONENT: opponent}, self._policy_of)

    def collect(self, seeds: Sequence[int], group_size: int = 1) -> list[Trajectory]:
        """The learner's rows of ``group_size`` episodes per seed, group-contiguous, seat by seat."""
        dealt: dict[str, list[int]] = {}
        for i, seed in enumerate(seeds):
            dealt.setdefault(self.seats[(self.cursor + i) % len(self.seats)], []).append(seed)
        self.cursor += len(seeds)
        rows: list[Trajectory] = []
        for seat in self.seats:
            if seat in dealt:
                self.seat = seat
                rows += [
                    row for row in self.engine.collect(dealt[seat], group_size) if row.policy == self.learner
                ]
        return rows

    def state_dict(self) -> dict[str, Any]:
        """The engine's counters and the seat cursor, for checkpoints."""
        return {"engine": self.engine.state_dict(), "cursor": self.cursor}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`.

        Raises:
            CheckpointError: ``state`` is a plain engine's, saved by a run without ``--opponent-pool``;
                nothing is loaded.
        """
        if "engine" not in state:
            raise CheckpointError(NO_POOL)
        self.engine.load_state_dict(state["engine"])
        self.cursor = int(state["cursor"])

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> OpponentRollout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _policy_of(self, agent: str | None) -> str:
        return self.learner if agent == self.seat else self.OPPONENT
