"""One episode of a writing task, free of any RL API: parts written round by round, each round scored.

In every round each agent submits its part. When the last part of a round arrives the joint text is
scored by the reward function, and the round's reward is the change in score: ``score_1`` after the
first round, ``score_r - score_(r-1)`` after a later one. The rewards of an episode therefore add up
to the score of the final text, and a revision that makes the text worse is paid negatively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mrlm.envs.writing.prompts import closing_text, task_text
from mrlm.envs.writing.reward import RewardFn, Score, as_score
from mrlm.envs.writing.tasks import WritingTask


class WritingGame:
    """The state of one episode.

    Args:
        task: what is written.
        rounds: how many times each agent writes its part (a draft, then revisions).
        reward_fn: scores the parts of a round (see :mod:`mrlm.envs.writing.reward`).
    """

    def __init__(self, task: WritingTask, *, rounds: int, reward_fn: RewardFn) -> None:
        if rounds < 1:
            raise ValueError(f"rounds must be positive, got {rounds}")
        self.task = task
        self.rounds = rounds
        self.reward_fn = reward_fn
        self.latest: dict[str, str] = {}  # each agent's most recent part
        self.pending: dict[str, str] = {}  # parts of the round being written
        self.scores: list[Score] = []

    @property
    def round(self) -> int:
        """The round being written, from 1 (``rounds + 1`` once the text is finished)."""
        return len(self.scores) + 1

    @property
    def done(self) -> bool:
        return len(self.scores) >= self.rounds

    @property
    def reward(self) -> float:
        """The reward of the last scored round (0 before the first)."""
        if not self.scores:
            return 0.0
        previous = self.scores[-2].total if len(self.scores) > 1 else 0.0
        return self.scores[-1].total - previous

    def submit(self, agent: str, text: str) -> bool:
        """Record ``agent``'s part for this round; True when it completed the round (then scored)."""
        if self.done:
            raise RuntimeError("the text is finished; start a new episode")
        self.task.role(agent)  # KeyError for a stranger
        if agent in self.pending:
            raise ValueError(f"{agent!r} already wrote its part of round {self.round}")
        self.pending[agent] = text
        self.latest[agent] = text
        if len(self.pending) < len(self.task.roles):
            return False
        self.scores.append(as_score(self.reward_fn(self.task, dict(self.pending))))
        self.pending = {}
        return True

    def observation(self, agent: str) -> str:
        """What ``agent`` reads now: the task and the latest parts, or the closing message."""
        if self.done:
            return closing_text(self.task, agent, self.scores[-1].total, self.rounds)
        last_score = self.scores[-1].total if self.scores else None
        return task_text(
            self.task,
            agent,
            round=self.round,
            rounds=self.rounds,
            own=self.latest.get(agent),
            partner=self.latest.get(self.task.partner(agent).agent),
            last_score=last_score,
        )

    def start_info(self, agent: str) -> dict[str, Any]:
        """The reset info of ``agent``: what the task is and what is asked of it."""
        role = self.task.role(agent)
        return {
            "task": self.task.kind,
            "index": self.task.index,
            "origin": self.task.origin,
            "title": self.task.title,
            "role": agent,
            "length_band": list(role.band),
            "rounds": self.rounds,
            "has_reference": role.reference is not None,
        }

    def round_info(self, agent: str) -> dict[str, Any]:
        """The info of ``agent`` after the last scored round (``{"round": r}`` before any)."""
        if not self.scores:
            return {"round": self.round}
        score = self.scores[-1]
        return {
            "round": len(self.scores),
            "score": score.total,
            "reward": self.reward,
            "components": dict(score.components),
            "agent_components": dict(score.per_agent.get(agent, {})),
        }

    def infos(self) -> Mapping[str, dict[str, Any]]:
        return {role.agent: self.round_info(role.agent) for role in self.task.roles}
