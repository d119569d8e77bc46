"""The rules of a writing task, free of any RL API: parts written round by round, each round scored.

In every round each agent submits its part. When the last part of a round arrives the joint text is
scored by the reward function, and the round's reward is the change in score: ``score_1`` after the
first round, ``score_r - score_(r-1)`` after a later one. The rewards of an episode therefore add up
to the score of the final text, and a revision that makes the text worse is paid negatively.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrlm.envs.core.game import play_in_turn
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.writing.abstracts import ABSTRACTS
from mrlm.envs.writing.posts import POSTS
from mrlm.envs.writing.prompts import closing_text, task_text
from mrlm.envs.writing.records import Records, load_records
from mrlm.envs.writing.reward import RewardFn, Score, WritingReward, as_score
from mrlm.envs.writing.tasks import AGENTS, TASK_KINDS, TaskKind, WritingTask, check_band


class WritingGame:
    """The game (:class:`~mrlm.envs.core.game.Game`) of ``mrlm/Writing-v0``: the tasks, the rounds, the
    reward function, and the episode being written.

    Args:
        tasks: the tasks, all of one kind; each episode writes one (see
            :func:`~mrlm.envs.core.task_choice.choose_task`).
        rounds: how many times each agent writes its part (a draft, then revisions).
        reward_fn: scores the parts of a round (see :mod:`mrlm.envs.writing.reward`).
    """

    def __init__(self, tasks: Sequence[WritingTask], *, rounds: int, reward_fn: RewardFn) -> None:
        if not tasks:
            raise ValueError("a writing game needs at least one task")
        if rounds < 1:
            raise ValueError(f"rounds must be positive, got {rounds}")
        self.tasks = tuple(tasks)
        self.kind: TaskKind = self.tasks[0].kind
        self.rounds = rounds
        self.reward_fn = reward_fn
        self.task = self.tasks[0]
        self.latest: dict[str, str] = {}  # each agent's most recent part
        self.pending: dict[str, str] = {}  # parts of the round being written
        self.scores: list[Score] = []

    @classmethod
    def build(
        cls,
        *,
        task: str,
        records: Records | None,
        rounds: int | None,
        max_cycles: int | None,
        reward_fn: RewardFn | None,
        length_bands: Mapping[str, tuple[int, int]] | None,
    ) -> WritingGame:
        """The game from the env's keyword arguments, each checked (see ``WritingEnv``)."""
        if task not in TASK_KINDS:
            raise ValueError(f"task must be one of {', '.join(TASK_KINDS)}, got {task!r}")
        kind: TaskKind = "tldr" if task == "tldr" else "introduction"
        if rounds is None:
            # PettingZoo's convention: max_cycles is the length of an episode when the game sets none.
            rounds = max_cycles if isinstance(max_cycles, int) and max_cycles > 0 else 1
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ValueError(f"rounds must be a positive int or None, got {rounds!r}")
        if reward_fn is not None and not callable(reward_fn):
            raise TypeError(f"reward_fn must be callable as reward_fn(task, parts), got {reward_fn!r:.60}")
        if records is None:
            builtin = POSTS if kind == "tldr" else ABSTRACTS
            tasks = load_records(builtin, kind, origin="builtin")
        else:
            tasks = load_records(records, kind)
        if length_bands:
            unknown = sorted(set(length_bands) - set(AGENTS[kind]))
            if unknown:
                raise ValueError(f"length_bands names {unknown}; the {kind} agents are {AGENTS[kind]}")
            bands = {agent: check_band(agent, band) for agent, band in length_bands.items()}
            tasks = [t.with_bands(bands) for t in tasks]
        return cls(tasks, rounds=rounds, reward_fn=reward_fn or WritingReward())

    @property
    def agents(self) -> tuple[str, ...]:
        return AGENTS[self.kind]

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

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Begin writing a task (``options["index"]``, else ``seed % n``, else a draw from ``rng``);
        return each agent's reset info."""
        self.task = choose_task(self.tasks, {}, rng, options, seed=seed)
        self.latest, self.pending, self.scores = {}, {}, []
        return {agent: self.start_info(agent) for agent in self.agents}

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

    def move(self, agent: str, action: str) -> Outcome:
        """Take ``agent``'s part; the last part of a round scores it and pays every agent its reward."""
        if not self.submit(agent, action):
            return Outcome(infos=self.infos())
        return Outcome(
            rewards=dict.fromkeys(self.agents, self.reward),
            done=self.done,
            infos=self.infos(),
            notes=[("score", f"round {len(self.scores)}: {self.scores[-1].total:.4f}")],
        )

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """Every agent's part of a round at once: each sees only the parts of earlier rounds."""
        return play_in_turn(self, actions)

    def observe(self, agent: str) -> str:
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

    def render(self) -> None:
        """None: the env's transcript (parts, then each round's score) is the picture."""
        return None

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

    def infos(self) -> dict[str, dict[str, Any]]:
        """Every agent's :meth:`round_info`."""
        return {role.agent: self.round_info(role.agent) for role in self.task.roles}
