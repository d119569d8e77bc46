"""Replies and limits shared by the code env tests."""

from __future__ import annotations

from typing import Any

from mrlm.envs.code import CodeTask, TestStep, build_program, judge
from mrlm.envs.sandbox import Limits, Sandbox

#: Short limits keep the tests fast; a whole execution still has ample time.
FAST: dict[str, Any] = {"time_limit_s": 5.0, "test_time_limit_s": 1.0}


def fenced(code: str) -> str:
    """A reply holding ``code`` in a python block, as a model would write it."""
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def wrong_solution(entry_point: str, is_class: bool) -> str:
    """A solution of the right name that does nothing useful."""
    if is_class:
        return f"class {entry_point}:\n    pass\n"
    return f"def {entry_point}(*args, **kwargs):\n    return None\n"


#: Limits of one judged run in the tests that pin the judge's rules.
JUDGE_LIMITS = Limits(wall_time_s=20.0, cpu_time_s=20.0)


def judged_errors(
    sandbox: Sandbox, entry_point: str, solution: str, *tests: str, setup: str = ""
) -> list[str | None]:
    """Judge ``solution`` against ``tests`` (after ``setup``); each test's error, None where it passed.
    The run must get as far as the tests (outcome passed or failed)."""
    task = CodeTask(entry_point, entry_point, "", "", setup, tuple(TestStep(test) for test in tests))
    verdict = judge(build_program(task, solution), task, sandbox, JUDGE_LIMITS, step_time_limit_s=10.0)
    assert verdict.outcome in ("passed", "failed"), verdict
    return [result.error for result in verdict.results]
