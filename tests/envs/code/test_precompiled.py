"""The judge loads the tests as the caller compiled them where it runs the same interpreter, and
compiles their text itself otherwise; tests that do not compile are reported as before."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys

import pytest

from mrlm.envs.code import CodeTask, TestStep, build_program, judge
from mrlm.envs.code.execution import MAX_COMPILED_CHARS, bootstrap_program, compiled_tests, read_report
from mrlm.envs.sandbox import Limits, Sandbox

LIMITS = Limits(wall_time_s=10.0, cpu_time_s=10.0)


def _report(sandbox: Sandbox, compiled: str | None, compiled_for: str, test: str = "assert f() == 1") -> dict:
    """The judge's report on a task whose test text is ``test``, sent with ``compiled`` code."""
    payload = {
        "nonce": "n0",
        "solution": "def f():\n    return 1\n",
        "entry_point": "f",
        "test_setup": "",
        "steps": [[test, True]],
        "compiled": compiled,
        "compiled_for": compiled_for,
        "step_time_limit_s": 5.0,
        "error_chars": 300,
    }
    result = sandbox.run(bootstrap_program(), stdin=json.dumps(payload), limits=LIMITS)
    report, problem = read_report(result.stdout, "n0")
    assert report is not None, (problem, result)
    return report


def test_the_judge_runs_the_callers_code_for_its_own_interpreter_only(sandbox: Sandbox) -> None:
    # Compiled from other text than is sent, to see which of the two the judge ran.
    failing = compiled_tests("", ("assert f() == 2",), "f")
    assert failing is not None
    ran_compiled = _report(sandbox, failing, sys.version)
    assert ran_compiled["results"][0][:2] == [False, "AssertionError"], ran_compiled
    ran_text = _report(sandbox, failing, "another interpreter")
    assert ran_text["results"] == [[True, None, False, None]], ran_text
    assert _report(sandbox, None, sys.version)["results"] == [[True, None, False, None]]


def test_tests_that_do_not_compile_are_judged_as_before(sandbox: Sandbox) -> None:
    task = CodeTask(
        task_id="broken",
        entry_point="f",
        description="",
        prompt_code="",
        test_setup="",
        steps=(TestStep("assert f( == 1", True),),
    )
    assert compiled_tests(task.test_setup, ("assert f( == 1",), "f") is None
    verdict = judge(
        build_program(task, "def f():\n    return 1\n"), task, sandbox, LIMITS, step_time_limit_s=5.0
    )
    assert verdict.outcome == "error" and "SyntaxError" in verdict.message, verdict


def test_a_caller_under_python_o_still_sends_the_asserts() -> None:
    # -O strips asserts from what compile() makes by default: every test would pass.
    script = "from mrlm.envs.code.execution import compiled_tests\nprint(compiled_tests('', ('assert 1 == 2',), 'f'))\n"
    made = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, check=True)
    (code,) = marshal.loads(bytes.fromhex(made.stdout.strip()))[1:]
    with pytest.raises(AssertionError):
        exec(code, {})


def test_the_compiled_tests_mean_what_the_judge_makes_of_their_text(sandbox: Sandbox) -> None:
    # The judge compiles text under its module's future flags (annotations stay unevaluated).
    test = "def g(x: NotDefinedAnywhere) -> None:\n    pass\nassert f() == 1"
    compiled = compiled_tests("", (test,), "f")
    from_text = _report(sandbox, compiled, "another interpreter", test)
    from_compiled = _report(sandbox, compiled, sys.version, test)
    assert from_compiled["results"] == from_text["results"] == [[True, None, False, None]], (
        from_text,
        from_compiled,
    )


def test_tests_too_large_to_send_compiled_go_as_text() -> None:
    steps = tuple(f"assert {index} == {index}" for index in range(3000))
    assert compiled_tests("", steps[:10], "f") is not None
    assert compiled_tests("", steps, "f") is None, MAX_COMPILED_CHARS
