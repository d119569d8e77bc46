"""The rules of ``mrlm/ClassCompletion-v0``, shared by its parallel and turn-based (AEC) forms.

A round is every agent replying with methods; the implementations are placed by the ownership
rules (:mod:`mrlm.envs.class_completion.ownership`), the class is assembled and tested, and each
agent is rewarded with the change in the team's score minus its own penalties of the round. The
class carries over from round to round: a method not sent again keeps its last version. The game
knows nothing of PettingZoo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrlm.envs.class_completion import feedback
from mrlm.envs.class_completion.assembly import assemble
from mrlm.envs.class_completion.judging import run_tests
from mrlm.envs.class_completion.methods import ReplyCode, read_reply
from mrlm.envs.class_completion.ownership import Assignment, Ledger, apply_round, deal
from mrlm.envs.class_completion.scoring import balance, team_score
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.sandbox import Limits, Sandbox


class ClassCompletionGame:
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
        limits: limits of one execution of the class with its tests.
        test_time_limit_s: time limit of each test.
        feedback_chars: longest error detail shown after a round.
        sandbox: the sandbox that runs the classes; None for the one shared by the process.
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
        limits: Limits,
        test_time_limit_s: float,
        feedback_chars: int,
        sandbox: Sandbox | None,
    ) -> None:
        self.tasks = tuple(tasks)
        self.agents = tuple(agents)
        self._index = {task.task_id: position for position, task in enumerate(self.tasks)}
        self.assignment = assignment
        self.max_turns = max_turns
        self.weights = dict(weights)
        self.idle_penalty = idle_penalty
        self.overwrite_penalty = overwrite_penalty
        self.limits = limits
        self.test_time_limit_s = test_time_limit_s
        self.feedback_chars = feedback_chars
        self._sandbox = sandbox
        self.task = self.tasks[0]
        self.dealt: dict[str, str] = {}
        self.ledger = Ledger()
        self.turn = 0
        self._previous_score = 0.0
        self._texts: dict[str, str] = {}

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox that runs the classes: the one given, else one shared by the process."""
        return self._sandbox if self._sandbox is not None else Sandbox.shared()

    def __getstate__(self) -> dict[str, Any]:
        # A sandbox holds worker processes and cannot travel; a copy uses the shared one.
        state = dict(self.__dict__)
        state["_sandbox"] = None
        return state

    def start(self, rng: np.random.Generator, options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Draw a task (or take ``options["task_id"]`` / ``options["index"]``), deal the methods when
        the env assigns them, and return the reset infos."""
        self.task = self._choose(rng, options)
        self.dealt = deal(self.task.method_names, self.agents, rng) if self.assignment == "env" else {}
        self.ledger = Ledger(owners=dict(self.dealt))
        self.turn = 0
        self._previous_score = 0.0
        self._texts = {
            agent: feedback.task_text(self.task, self.agents, agent, self.assignment, self.dealt)
            for agent in self.agents
        }
        return {
            agent: {
                "system_prompt": feedback.SYSTEM_PROMPT,
                "task_id": self.task.task_id,
                "source": self.task.source,
                "class_name": self.task.class_name,
                "methods": list(self.task.method_names),
                "assignment": self.assignment,
                "assigned": [name for name in self.task.method_names if self.dealt.get(name) == agent],
                "num_tests": len(self.task.tests.tests),
            }
            for agent in self.agents
        }

    def observe(self, agent: str) -> str:
        """The text ``agent`` sees now: the task, or the result of the last round."""
        return self._texts[agent]

    def draft(self, reply: str) -> ReplyCode:
        """What a reply offers the class (nothing is placed or run)."""
        return read_reply(reply, self.task.class_name)

    def play(self, replies: Mapping[str, str]) -> Outcome:
        """Place, test and score one round of replies."""
        self.turn += 1
        changes = apply_round(
            self.ledger, {agent: self.draft(replies[agent]) for agent in self.agents}, self.agents
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
            "tests": verdict.pass_fraction if verdict.outcome in ("passed", "failed", "timeout") else 0.0,
            "balance": balance(list(counts.values())),
        }
        score = team_score(components, self.weights)
        idle = {agent: counts[agent] == 0 and self._could_work(agent) for agent in self.agents}
        penalties = {
            agent: self.idle_penalty * idle[agent] + self.overwrite_penalty * len(changes.overwrites[agent])
            for agent in self.agents
        }
        gain = score - self._previous_score
        self._previous_score = score
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
            "results": [
                {"passed": result.passed, "error": result.error, "timed_out": result.timed_out}
                for result in verdict.results
            ],
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
        return Outcome(
            rewards={agent: gain - penalties[agent] for agent in self.agents},
            done=verdict.all_passed or turns_left == 0,
            infos=infos,
        )

    def _could_work(self, agent: str) -> bool:
        if self.assignment == "env":
            return agent in self.dealt.values()
        return len(self.task.methods) >= len(self.agents)

    def _choose(self, rng: np.random.Generator, options: Mapping[str, Any]) -> ClassTask:
        return choose_task(self.tasks, self._index, rng, options)
