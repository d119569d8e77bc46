"""The rules of ``mrlm/CoopCode-v0``, shared by its parallel and turn-based (AEC) forms.

A round is one attempt: every agent replies with its part, the parts are assembled, tested and
scored, and every agent gets the same reward. The game knows nothing of PettingZoo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrlm.envs.code.execution import Verdict
from mrlm.envs.coop_code import feedback
from mrlm.envs.coop_code.assembly import Assembly, Contribution, assemble, contribute
from mrlm.envs.coop_code.judging import Components, components, run_tests
from mrlm.envs.coop_code.tasks import CoopTask
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.sandbox import Limits, Sandbox


class CoopCodeGame:
    """Tasks, turns, judging and scoring of one team.

    Args:
        tasks: the tasks; each has one part per agent.
        agents: the agents, in part order.
        max_turns: attempts per episode; None for no limit (then ``max_cycles`` must end episodes).
        weights: the weight of each reward component.
        limits: limits of one execution of the program with its tests.
        test_time_limit_s: time limit of each test.
        feedback_chars: longest error detail shown after an attempt.
        sandbox: the sandbox that runs the programs; None for the one shared by the process.
    """

    def __init__(
        self,
        tasks: Sequence[CoopTask],
        agents: Sequence[str],
        *,
        max_turns: int | None,
        weights: Mapping[str, float],
        limits: Limits,
        test_time_limit_s: float,
        feedback_chars: int,
        sandbox: Sandbox | None,
    ) -> None:
        self.tasks = tuple(tasks)
        self.agents = tuple(agents)
        self._index = {task.task_id: position for position, task in enumerate(self.tasks)}
        self.max_turns = max_turns
        self.weights = dict(weights)
        self.limits = limits
        self.test_time_limit_s = test_time_limit_s
        self.feedback_chars = feedback_chars
        self._sandbox = sandbox
        self.task = self.tasks[0]
        self.turn = 0
        self._previous_score = 0.0
        self._texts: dict[str, str] = {}

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox that runs the programs: the one given, else one shared by the process."""
        return self._sandbox if self._sandbox is not None else Sandbox.shared()

    def __getstate__(self) -> dict[str, Any]:
        # A sandbox holds worker processes and cannot travel; a copy uses the shared one.
        state = dict(self.__dict__)
        state["_sandbox"] = None
        return state

    def start(self, rng: np.random.Generator, options: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Draw a task (or take ``options["task_id"]`` / ``options["index"]``); return reset infos."""
        self.task = self._choose(rng, options)
        self.turn = 0
        self._previous_score = 0.0
        self._texts = {agent: feedback.task_text(self.task, self.agents, agent) for agent in self.agents}
        owners = {part.name: agent for part, agent in zip(self.task.parts, self.agents, strict=True)}
        return {
            agent: {
                "system_prompt": feedback.SYSTEM_PROMPT,
                "task_id": self.task.task_id,
                "source": self.task.source,
                "function": part.name,
                "owners": dict(owners),
                "num_tests": len(self.task.tests.tests),
            }
            for agent, part in zip(self.agents, self.task.parts, strict=True)
        }

    def observe(self, agent: str) -> str:
        """The text ``agent`` sees now: its part of the task, or the result of the last attempt."""
        return self._texts[agent]

    def draft(self, agent: str, reply: str) -> Contribution:
        """What ``agent``'s ``reply`` adds to the program (no test is run)."""
        index = self.agents.index(agent)
        part = self.task.parts[index]
        teammates = [other.name for other in self.task.parts if other.name != part.name]
        return contribute(agent, part, reply, teammates)

    def play(self, replies: Mapping[str, str]) -> Outcome:
        """Judge one attempt made of every agent's reply; the reward is the change in team score."""
        self.turn += 1
        contributions = [self.draft(agent, replies[agent]) for agent in self.agents]
        assembly = assemble(self.task.context, contributions)
        verdict = run_tests(
            assembly, self.task, self.sandbox, self.limits, step_time_limit_s=self.test_time_limit_s
        )
        parts = components(self.task, contributions, verdict)
        score = parts.score(self.weights)
        reward = score - self._previous_score
        self._previous_score = score
        turns_left = None if self.max_turns is None else self.max_turns - self.turn
        done = verdict.all_passed or turns_left == 0
        for agent in self.agents:
            self._texts[agent] = feedback.attempt_text(
                self.task,
                agent,
                self.turn,
                assembly,
                contributions,
                verdict,
                parts,
                turns_left=turns_left,
                max_chars=self.feedback_chars,
            )
        info = self._info(assembly, contributions, verdict, parts, score)
        return Outcome(
            rewards=dict.fromkeys(self.agents, reward), done=done, infos=dict.fromkeys(self.agents, info)
        )

    def _info(
        self,
        assembly: Assembly,
        contributions: Sequence[Contribution],
        verdict: Verdict,
        parts: Components,
        score: float,
    ) -> dict[str, Any]:
        return {
            "task_id": self.task.task_id,
            "turn": self.turn,
            "score": score,
            "components": parts.as_dict(),
            "usages": dict(parts.usages),
            "outcome": verdict.outcome,
            "passed": verdict.passed,
            "total": verdict.total,
            "all_passed": verdict.all_passed,
            "results": [
                {"passed": result.passed, "error": result.error, "timed_out": result.timed_out}
                for result in verdict.results
            ],
            "message": verdict.message,
            "parts": {
                c.agent: {
                    "function": c.part,
                    "defined": c.defined,
                    "parses": c.parses,
                    "dropped": list(c.dropped),
                }
                for c in contributions
            },
            "program": assembly.source,
        }

    def _choose(self, rng: np.random.Generator, options: Mapping[str, Any]) -> CoopTask:
        return choose_task(self.tasks, self._index, rng, options)
