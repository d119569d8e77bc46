"""The built-in classes are sound: the reference methods pass every test, and every method is tested."""

from __future__ import annotations

import pytest

from mrlm.envs.class_completion import assemble, builtin_classes, builtin_records
from mrlm.envs.class_completion.classeval import FIELDS
from mrlm.envs.class_completion.judging import run_tests
from mrlm.envs.sandbox import Limits, Sandbox

LIMITS = Limits(wall_time_s=10.0, cpu_time_s=10.0)


def test_five_classes_of_four_methods_in_classeval_format() -> None:
    records = builtin_records()
    assert len(records) == 5
    for record in records:
        assert all(record[name] for name in FIELDS)
        assert {"import_statement", "class_description", "solution_code", "test_classes", "fields"} <= set(
            record
        )
        assert len(record["methods_info"]) == 4
        assert record["test_classes"][-1] == f"{record['class_name']}Test"
    tasks = builtin_classes()
    assert [task.task_id for task in tasks] == [f"mrlm-class/{index}" for index in range(5)]
    assert all(task.source == "builtin" and all(m.solution for m in task.methods) for task in tasks)


@pytest.mark.parametrize("index", range(5))
def test_reference_methods_pass_and_each_missing_method_fails_a_test(sandbox: Sandbox, index: int) -> None:
    task = builtin_classes()[index]
    solutions = {method.name: ("agent_0", method.solution or "") for method in task.methods}
    verdict = run_tests(assemble(task, solutions, []), task, sandbox, LIMITS, step_time_limit_s=3.0)
    assert verdict.all_passed, (task.task_id, verdict)
    for name in task.method_names:
        partial = {other: code for other, code in solutions.items() if other != name}
        verdict = run_tests(assemble(task, partial, []), task, sandbox, LIMITS, step_time_limit_s=3.0)
        assert verdict.outcome == "failed", (task.task_id, name)
