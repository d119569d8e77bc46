"""The built-in problems are sound: each is solvable, its tests can fail, its docstring examples hold."""

from __future__ import annotations

import ast
import doctest
from typing import Any

import pytest

from mrlm.envs.code import builtin_tasks
from mrlm.envs.code.problems import PROBLEMS
from mrlm.envs.sandbox import Sandbox
from tests.envs.code.replies import fenced, wrong_solution

TASKS = builtin_tasks()
IDS = [task.task_id for task in TASKS]


def test_there_are_at_least_20_distinct_problems() -> None:
    assert len(TASKS) >= 20
    assert len(set(IDS)) == len(IDS)
    assert len({task.entry_point for task in TASKS}) == len(TASKS)
    assert all(len(task.tests) >= 5 for task in TASKS)
    kinds = {problem.prompt.split()[0] for problem in PROBLEMS}
    assert kinds == {"def", "class"}  # functions, generators and classes


@pytest.mark.parametrize("index", range(len(TASKS)), ids=IDS)
def test_canonical_solution_passes_every_test(index: int, make_env: Any) -> None:
    env = make_env()
    task = TASKS[index]
    env.reset(options={"index": index})
    assert task.canonical_solution is not None
    observation, reward, terminated, _, info = env.step(fenced(task.canonical_solution))
    assert info["outcome"] == "passed", (observation, info["results"])
    assert (reward, terminated, info["passed"], info["total"]) == (
        1.0,
        True,
        len(task.tests),
        len(task.tests),
    )


@pytest.mark.parametrize("index", range(len(TASKS)), ids=IDS)
def test_a_wrong_solution_fails_a_test(index: int, make_env: Any) -> None:
    env = make_env()
    task = TASKS[index]
    env.reset(options={"index": index})
    wrong = wrong_solution(task.entry_point, is_class=task.prompt_code.startswith("class"))
    _, reward, _, _, info = env.step(fenced(wrong))
    assert info["outcome"] == "failed", info
    assert info["passed"] < info["total"] and reward < 1.0


def test_docstring_examples_agree_with_the_solutions(sandbox: Sandbox) -> None:
    """Every ``>>>`` example, checked in one sandbox run against the reference solutions."""
    checks = []
    for task in TASKS:
        assert task.canonical_solution is not None
        checks.append(task.canonical_solution)
        definition = ast.parse(task.prompt_code).body[0]
        assert isinstance(definition, (ast.FunctionDef, ast.ClassDef))
        docstring = ast.get_docstring(definition) or ""
        examples = doctest.DocTestParser().get_examples(docstring)
        assert task.prompt_code.startswith("class") or examples, f"{task.task_id} has no example"
        for example in examples:
            checks.append(
                f"assert repr({example.source.strip()}) == {example.want.strip()!r}, {task.task_id!r}"
            )
    result = sandbox.run("\n".join(checks))
    assert result.ok, result.stderr[-2000:]
