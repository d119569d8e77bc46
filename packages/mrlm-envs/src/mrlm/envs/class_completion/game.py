"""The rules of ``mrlm/ClassCompletion-v0``, shared by its parallel and turn-based (AEC) forms.

A round is every agent replying with methods; the implementations are placed by the ownership
rules (:mod:`mrlm.envs.class_completion.ownership`), the class is assembled and tested, and each
agent is rewarded with the change in the team's score minus its own penalties of the round. The
class carries over from round to round: a method not sent again keeps its last version.
:class:`ClassCompletionGame` is a :class:`~mrlm.envs.core.game.Game`; it knows nothing of PettingZoo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrlm.envs.class_completion import feedback
from mrlm.envs.class_completion.assembly import assemble
from mrlm.envs.class_completion.classes import builtin_classes
from mrlm.envs.class_completion.classeval import ClassSource, load_class_tasks
from mrlm.envs.class_completion.judging import run_tests
from mrlm.envs.class_completion.methods import ReplyCode, read_reply
from mrlm.envs.class_completion.ownership import ASSIGNMENTS, Assignment, Ledger, apply_round, deal
from mrlm.envs.class_completion.scoring import balance, team_score
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.core.game import PendingRound
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.numbers import finite_float
from mrlm.envs.core.sandboxed import Judging, SandboxedTasks

#: What ``records`` accepts: ClassEval records (a JSON or JSONL path, a list of dicts, a Dataset) or tasks.
Records = ClassSource | Sequence[ClassTask]


class ClassCompletionGame(SandboxedTasks[ClassTask]):
    """Tasks, ownership, rounds, judging and scoring of one team.

    Args:
        tasks: the classes to complete.
        agents: the agents, in turn (and tie-break) order.
        assignment: ``"env"`` or ``"agents"`` (see :mod:`~mrlm.envs.class_completion.ownership`).
        max_turns: rounds per episode; None for no limit (then ``max_cycles`` must end episodes).
        weights: the weight of each team component.
        idle_penalty: charged each round to an agent that owns no implemented method although it
            could have one (it was dealt one, or the class has a method per agent).
        overwrite_penalty: charged per teammate's method an agent implements in a round.
        judging: how the classes are run and reported.
    """

    def __init__(
        self,
        tasks: Sequence[ClassTask],
        agents: Sequence[str],
        *,
        assignment: Assignment,
        max_turns: int | None,
        weights: Mapping[str, float],
        idle_penalty: float,
        overwrite_penalty: float,
        judging: Judging,
    ) -> None:
        super().__init__(tasks, judging)
        if assignment not in ASSIGNMENTS:
            raise ValueError(f"assignment must be one of {ASSIGNMENTS}, got {assignment!r}")
        self.idle_penalty = finite_float("idle_penalty", idle_penalty)
        self.overwrite_penalty = finite_float("overwrite_penalty", overwrite_penalty)
        for name in ("idle_penalty", "overwrite_penalty"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        self.agents = tuple(agents)
        self.assignment = assignment
        self.max_turns = max_turns
        self.weights = dict(weights)
        self.dealt: dict[str, str] = {}
        self.ledger = Ledger()
        self.turn = 0
        self._texts: dict[str, str] = {}
        self._round: PendingRound[ReplyCode] = PendingRound()

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Choose a task (see :meth:`~mrlm.envs.core.sandboxed.SandboxedTasks.start_task`), deal the
        methods when the env assigns them, and return the reset infos."""
        task = self.start_task(rng, seed, options)
        self.dealt = deal(task.method_names, self.agents, rng) if self.assignment == "env" else {}
        self.ledger = Ledger(owners=dict(self.dealt))
        self.turn = 0
        self._texts = {
            agent: feedback.task_text(task, self.agents, agent, self.assignment, self.dealt)
            for agent in self.agents
        }
        infos = {
            agent: {
                "system_prompt": feedback.SYSTEM_PROMPT,
                "task_id": task.task_id,
                "source": task.source,
                "class_name": task.class_name,
                "methods": list(task.method_names),
                "assignment": self.assignment,
                "assigned": [name for name in task.method_names if self.dealt.get(name) == agent],
                "num_tests": len(task.tests.tests),
            }
            for agent in self.agents
        }
        self._round.close(infos)
        return infos

    def observe(self, agent: str) -> str:
        """The task, or the result of the last round, and (turn-based form) what ``agent``'s teammates
        have already implemented this round."""
        return self._texts[agent] + feedback.drafts_text(self._round.drafts_for(agent))

    def draft(self, reply: str) -> ReplyCode:
        """What a reply offers the class (nothing is placed or run)."""
        return read_reply(reply, self.task.class_name)

    def move(self, agent: str, action: str) -> Outcome:
        """One agent's reply (turn-based form); the last reply of a round has the round played."""
        self._round.add(agent, action, self.draft(action))
        if len(self._round.replies) < len(self.agents):
            return Outcome(infos=self._round.last_infos)
        return self.play(self._round.replies)

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """Place, test and score one round of replies."""
        self.turn += 1
        changes = apply_round(
            self.ledger, {agent: self.draft(actions[agent]) for agent in self.agents}, self.agents
        )
        assembly = assemble(self.task, self.ledger.code, self.ledger.imports)
        verdict = run_tests(
            assembly, self.task, self.sandbox, self.limits, step_time_limit_s=self.test_time_limit_s
        )
        implemented = [name for name in self.task.method_names if name in self.ledger.code]
        counts = {
            agent: sum(self.ledger.code[name][0] == agent for name in implemented) for agent in self.agents
        }
        components = {
            "coverage": len(implemented) / len(self.task.methods),
            "tests": (
                self.disclosure.scored_fraction(verdict)
                if verdict.outcome in ("passed", "failed", "timeout")
                else 0.0
            ),
            "balance": balance(list(counts.values())),
        }
        score = team_score(components, self.weights)
        idle = {agent: counts[agent] == 0 and self._could_work(agent) for agent in self.agents}
        penalties = {
            agent: self.idle_penalty * idle[agent] + self.overwrite_penalty * len(changes.overwrites[agent])
            for agent in self.agents
        }
        gain = self.score_change(score)
        turns_left = None if self.max_turns is None else self.max_turns - self.turn
        owners = dict(self.ledger.owners)
        for agent in self.agents:
            self._texts[agent] = feedback.round_text(
                self.task,
                agent,
                self.turn,
                assembly,
                verdict,
                components,
                penalties[agent],
                changes,
                owners,
                implemented,
                turns_left=turns_left,
                max_chars=self.feedback_chars,
                disclosure=self.disclosure,
            )
        shared = {
            "task_id": self.task.task_id,
            "turn": self.turn,
            "team_score": score,
            "components": components,
            "counts": counts,
            "owners": {name: owners.get(name) for name in self.task.method_names},
            "implemented": implemented,
            "penalties": penalties,
            "outcome": verdict.outcome,
            "passed": verdict.passed,
            "total": verdict.total,
            "all_passed": verdict.all_passed,
            "results": verdict.result_infos(),
            "quoted_tests": sorted(self.disclosure.quoted),
            "message": verdict.message,
            "program": assembly.source,
        }
        infos = {
            agent: {
                **shared,
                "penalty": penalties[agent],
                "idle": idle[agent],
                "accepted": list(changes.accepted[agent]),
                "overwrites": list(changes.overwrites[agent]),
            }
            for agent in self.agents
        }
        self._round.close(infos)
        return Outcome(
            rewards={agent: gain - penalties[agent] for agent in self.agents},
            done=verdict.all_passed or turns_left == 0,
            infos=infos,
        )

    def render(self) -> None:
        """None: the env's transcript of replies is the picture."""
        return None

    def _could_work(self, agent: str) -> bool:
        if self.assignment == "env":
            return agent in self.dealt.values()
        return len(self.task.methods) >= len(self.agents)


def agent_names(num_agents: int) -> tuple[str, ...]:
    """``agent_0``, ``agent_1``, ...: the team, in turn and tie-break order."""
    if isinstance(num_agents, bool) or not isinstance(num_agents, int) or num_agents < 2:
        raise ValueError(f"num_agents must be an int of at least 2, got {num_agents!r}")
    return tuple(f"agent_{index}" for index in range(num_agents))


def game_tasks(records: Records | None) -> tuple[ClassTask, ...]:
    """The classes of ``records``; the built-in ones when None."""
    if records is None:
        return builtin_classes()
    if (
        isinstance(records, Sequence)
        and not isinstance(records, str)
        and records
        and all(isinstance(task, ClassTask) for task in records)
    ):
        return tuple(task for task in records if isinstance(task, ClassTask))
    return load_class_tasks(records)  # type: ignore[arg-type]
