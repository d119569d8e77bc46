"""Test the assembled class in the sandbox, through the harness of ``mrlm/Code-v0``.

One execution runs every test separately, with its own time limit, and reports through a line
written by a process the class cannot reach; nothing of the class runs in this process. Two cases are settled without
running it: no method implemented at all (the stubs earn no test, so every test fails) and a module
that does not parse (a syntax error).
"""

from __future__ import annotations

import ast
import warnings

from mrlm.envs.class_completion.assembly import Assembly
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.code.execution import TestResult, Verdict, judge
from mrlm.envs.code.program import Program
from mrlm.envs.sandbox import Limits, Sandbox

#: Longest error message kept per test, in characters.
ERROR_CHARS = 300


def run_tests(
    assembly: Assembly,
    task: ClassTask,
    sandbox: Sandbox,
    limits: Limits,
    *,
    step_time_limit_s: float,
) -> Verdict:
    """The verdict of the assembled class on the task's tests."""
    total = len(task.tests.tests)
    if not assembly.spans:
        idle = TestResult(False, "not run: no method of the class is implemented")
        return Verdict("failed", (idle,) * total, total)
    error = _syntax_error(assembly.source)
    if error is not None:
        text = error.text.rstrip("\n") if isinstance(error.text, str) else None
        return Verdict("syntax_error", (), total, None, f"SyntaxError: {error.msg}", error.lineno, text)
    program = Program(assembly.source, 0, "definition")
    return judge(
        program, task.tests, sandbox, limits, step_time_limit_s=step_time_limit_s, error_chars=ERROR_CHARS
    )


def _syntax_error(source: str) -> SyntaxError | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
        except SyntaxError as error:
            return error
        except (ValueError, RecursionError, MemoryError, OverflowError) as error:
            return SyntaxError(f"the module cannot be parsed: {type(error).__name__}")
    return None
