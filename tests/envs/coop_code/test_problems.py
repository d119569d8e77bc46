"""The built-in problems are sound: the reference parts pass and cooperate, the main part needs its helpers."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from mrlm.envs.coop_code import builtin_problems, usage
from tests.envs.coop_code.replies import fenced


def test_there_are_twelve_problems_for_two_or_three_agents() -> None:
    tasks = builtin_problems()
    assert len(tasks) == 12
    assert sorted(len(task.parts) for task in tasks) == [2] * 9 + [3] * 3
    assert len({task.task_id for task in tasks}) == 12
    for task in tasks:
        assert task.solution is not None and len(task.tests.tests) >= 5
        assert task.parts[-1].uses, f"{task.task_id}: the main part must use a helper"


@pytest.mark.parametrize("num_agents", [2, 3])
def test_reference_parts_score_one_and_use_each_other(make_env: Any, num_agents: int) -> None:
    env = make_env(num_agents=num_agents)
    for task in env.game.tasks:
        assert task.solution is not None
        for part, code in zip(task.parts, task.solution, strict=True):
            for callee in part.uses:
                assert usage(ast.parse(code), part.name, callee) == "used", (task.task_id, part.name, callee)
        env.reset(options={"task_id": task.task_id})
        actions = {agent: fenced(code) for agent, code in zip(env.agents, task.solution, strict=True)}
        _, rewards, terminations, _, infos = env.step(actions)
        assert infos[env.possible_agents[0]]["outcome"] == "passed", (task.task_id, infos["main"]["results"])
        assert rewards["main"] == pytest.approx(1.0) and terminations["main"] is True


def test_the_main_part_fails_without_its_helpers(make_env: Any) -> None:
    env = make_env()
    for task in env.game.tasks:
        assert task.solution is not None
        env.reset(options={"task_id": task.task_id})
        _, _, _, _, infos = env.step({"helper": "", "main": fenced(task.solution[-1])})
        assert infos["main"]["passed"] < infos["main"]["total"], task.task_id
