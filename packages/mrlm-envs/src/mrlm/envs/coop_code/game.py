"""The rules of ``mrlm/CoopCode-v0``, shared by its parallel and turn-based (AEC) forms.

A round is one attempt: every agent replies with its part, the parts are assembled, tested and
scored, and every agent gets the same reward. :class:`CoopCodeGame` is a
:class:`~mrlm.envs.core.game.Game`; it knows nothing of PettingZoo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mrlm.envs.code.execution import Verdict
from mrlm.envs.code.records import TaskSource
from mrlm.envs.code.tasks import CodeTask
from mrlm.envs.coop_code import feedback
from mrlm.envs.coop_code.assembly import Assembly, Contribution, assemble, contribute
from mrlm.envs.coop_code.judging import Components, components, run_tests
from mrlm.envs.coop_code.problems import builtin_problems
from mrlm.envs.coop_code.records import load_coop_tasks, split_task
from mrlm.envs.coop_code.tasks import CoopTask
from mrlm.envs.core.game import PendingRound
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.sandboxed import Judging, SandboxedTasks

#: What ``records`` accepts: records (a JSONL path, a list of dicts, a Dataset) or ready tasks.
Records = TaskSource | Sequence[CoopTask | CodeTask]


class CoopCodeGame(SandboxedTasks[CoopTask]):
    """Tasks, turns, judging and scoring of one team.

    Args:
        tasks: the tasks; each has one part per agent.
        agents: the agents, in part order.
        max_turns: attempts per episode; None for no limit (then ``max_cycles`` must end episodes).
        weights: the weight of each reward component.
        judging: how the programs are run and reported.
    """

    def __init__(
        self,
        tasks: Sequence[CoopTask],
        agents: Sequence[str],
        *,
        max_turns: int | None,
        weights: Mapping[str, float],
        judging: Judging,
    ) -> None:
        super().__init__(tasks, judging)
        self.agents = tuple(agents)
        self.max_turns = max_turns
        self.weights = dict(weights)
        self.turn = 0
        self._texts: dict[str, str] = {}
        self._round: PendingRound[Contribution] = PendingRound()

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Choose a task (see :meth:`~mrlm.envs.core.sandboxed.SandboxedTasks.start_task`); return the
        reset infos."""
        task = self.start_task(rng, seed, options)
        self.turn = 0
        self._texts = {agent: feedback.task_text(task, self.agents, agent) for agent in self.agents}
        owners = {part.name: agent for part, agent in zip(task.parts, self.agents, strict=True)}
        infos = {
            agent: {
                "system_prompt": feedback.SYSTEM_PROMPT,
                "task_id": task.task_id,
                "source": task.source,
                "function": part.name,
                "owners": dict(owners),
                "num_tests": len(task.tests.tests),
            }
            for agent, part in zip(self.agents, task.parts, strict=True)
        }
        self._round.close(infos)
        return infos

    def observe(self, agent: str) -> str:
        """Its part of the task, or the result of the last attempt, and (turn-based form) what its
        teammates have already written this round."""
        return self._texts[agent] + feedback.drafts_text(self._round.drafts_for(agent))

    def draft(self, agent: str, reply: str) -> Contribution:
        """What ``agent``'s ``reply`` adds to the program (no test is run)."""
        index = self.agents.index(agent)
        part = self.task.parts[index]
        teammates = [other.name for other in self.task.parts if other.name != part.name]
        return contribute(agent, part, reply, teammates)

    def move(self, agent: str, action: str) -> Outcome:
        """One agent's part (turn-based form); the last part of a round has the attempt judged."""
        self._round.add(agent, action, self.draft(agent, action))
        if len(self._round.replies) < len(self.agents):
            return Outcome(infos=self._round.last_infos)
        return self.play(self._round.replies)

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """Judge one attempt made of every agent's reply; the reward is the change in team score."""
        self.turn += 1
        contributions = [self.draft(agent, actions[agent]) for agent in self.agents]
        assembly = assemble(self.task.context, contributions)
        verdict = run_tests(
            assembly, self.task, self.sandbox, self.limits, step_time_limit_s=self.test_time_limit_s
        )
        parts = components(self.task, contributions, verdict, self.disclosure.scored_fraction(verdict))
        score = parts.score(self.weights)
        reward = self.score_change(score)
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
                disclosure=self.disclosure,
            )
        info = self._info(assembly, contributions, verdict, parts, score)
        infos = dict.fromkeys(self.agents, info)
        self._round.close(infos)
        return Outcome(rewards=dict.fromkeys(self.agents, reward), done=done, infos=infos)

    def render(self) -> None:
        """None: the env's transcript of replies is the picture."""
        return None

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
            "results": verdict.result_infos(),
            "quoted_tests": sorted(self.disclosure.quoted),
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


def game_tasks(records: Records | None, num_agents: int, helper_name: str) -> tuple[CoopTask, ...]:
    """The tasks of ``records`` (the built-in problems when None), each with ``num_agents`` parts."""
    if records is None:
        tasks = tuple(task for task in builtin_problems() if len(task.parts) == num_agents)
        if not tasks:
            raise ValueError(f"no built-in problem has {num_agents} parts; they have 2 or 3")
        return tasks
    if (
        isinstance(records, Sequence)
        and not isinstance(records, str)
        and records
        and all(isinstance(task, (CoopTask, CodeTask)) for task in records)
    ):
        ready = tuple(
            task if isinstance(task, CoopTask) else split_task(task, helper_name)
            for task in records
            if isinstance(task, (CoopTask, CodeTask))
        )
        return _check(ready, num_agents)
    return _check(load_coop_tasks(records, helper_name=helper_name), num_agents)  # type: ignore[arg-type]


def _check(tasks: tuple[CoopTask, ...], num_agents: int) -> tuple[CoopTask, ...]:
    wrong = [task.task_id for task in tasks if len(task.parts) != num_agents]
    if wrong:
        raise ValueError(
            f"num_agents={num_agents}, but tasks {wrong[:5]} have another number of parts "
            "(HumanEval, CoopHumanEval and MBPP records make two; parts records as many as they list)"
        )
    return tasks
