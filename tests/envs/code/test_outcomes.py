"""Outcomes and rewards: partial credit computed by hand, syntax errors, timeouts, crashes, no code."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mrlm.envs.code import CodeTask, TestStep
from tests.envs.code.replies import fenced

#: Five tests of ``grade(score)``; the partial solution below gets exactly tests 0, 1 and 3 right.
GRADE = CodeTask(
    task_id="grade",
    entry_point="grade",
    description="",
    prompt_code='def grade(score: int) -> str:\n    """A for 90 and up, B for 80 and up, C for 70 and up, else F."""\n',
    test_setup="",
    steps=(
        TestStep("assert grade(95) == 'A'"),
        TestStep("assert grade(85) == 'B'"),
        TestStep("assert grade(90) == 'A'"),
        TestStep("assert grade(10) == 'F'"),
        TestStep("assert grade(75) == 'C'"),
    ),
    canonical_solution=None,
)
PARTIAL = "def grade(score):\n    if score > 90:\n        return 'A'\n    if score >= 80:\n        return 'B'\n    return 'F'\n"
RIGHT = "def grade(score):\n    for cut, letter in ((90, 'A'), (80, 'B'), (70, 'C')):\n        if score >= cut:\n            return letter\n    return 'F'\n"


def _step(make_env: Any, reply: str, **kwargs: Any) -> tuple[str, float, bool, dict[str, Any]]:
    env = make_env(records=[GRADE], **kwargs)
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(reply)
    assert truncated is False
    return observation, reward, terminated, info


def test_partial_solution_reward_is_the_pass_fraction(make_env: Any) -> None:
    _, reward, terminated, info = _step(make_env, fenced(PARTIAL), all_pass_bonus=0.5)
    # Tests 0 (95 > 90), 1 (85 >= 80) and 3 (10 -> F) pass; 90 and 75 fail: 3 of 5, no bonus.
    assert [result["passed"] for result in info["results"]] == [True, True, False, True, False]
    assert reward == pytest.approx(3 / 5)
    assert (info["outcome"], info["passed"], info["total"], info["all_passed"]) == ("failed", 3, 5, False)
    assert (info["reward_pass"], info["reward_bonus"], info["reward_outcome"]) == (
        pytest.approx(0.6),
        0.0,
        0.0,
    )
    assert info["results"][2]["error"] == "AssertionError: got 'B', expected 'A'"
    assert terminated is True  # one turn by default
    assert info["sandbox_status"] == "ok"


def test_all_pass_gets_the_bonus(make_env: Any) -> None:
    observation, reward, terminated, info = _step(make_env, fenced(RIGHT), all_pass_bonus=0.5)
    assert (reward, terminated, info["outcome"], info["all_passed"]) == (1.5, True, "passed", True)
    assert (info["reward_pass"], info["reward_bonus"], info["score"]) == (1.0, 0.5, 1.5)
    assert observation == "All 5 tests passed."


def test_a_body_only_completion_is_accepted(make_env: Any) -> None:
    body = "    return 'A' if score >= 90 else 'B' if score >= 80 else 'C' if score >= 70 else 'F'\n"
    _, reward, _, info = _step(make_env, body)
    assert (info["outcome"], reward) == ("passed", 1.0)


def test_syntax_error_is_its_own_outcome_with_line_and_message(make_env: Any) -> None:
    reply = fenced("def grade(score):\n    if score >= 90\n        return 'A'\n")
    observation, reward, _, info = _step(make_env, reply, syntax_error_reward=-0.2, max_turns=2)
    assert (info["outcome"], reward, info["reward_outcome"]) == ("syntax_error", -0.2, -0.2)
    assert (info["passed"], info["total"], info["results"]) == (0, 5, [])
    assert "SyntaxError: expected ':' (line 2 of your code)" in observation
    assert "if score >= 90" in observation


def test_syntax_errors_in_a_completion_count_lines_from_the_reply(make_env: Any) -> None:
    observation, _, _, info = _step(make_env, "x = (1,\n", max_turns=2)
    assert info["outcome"] == "syntax_error"
    assert "(line 1 of your code)" in observation and "line 3" not in observation


def test_infinite_loop_in_a_test_is_a_timeout(make_env: Any) -> None:
    reply = fenced("def grade(score):\n    while True:\n        pass\n")
    observation, reward, _, info = _step(
        make_env, reply, timeout_reward=-0.1, test_time_limit_s=0.2, time_limit_s=3.0, max_turns=2
    )
    assert (info["outcome"], reward) == ("timeout", -0.1)
    assert info["results"][0]["timed_out"] is True
    assert all("not run" in result["error"] for result in info["results"][1:])  # stopped at the first
    assert "ran out of time" in observation and "assert grade(95) == 'A'" in observation


def test_a_loop_that_swallows_every_exception_still_stops_at_the_test_limit(make_env: Any) -> None:
    # The alarm belongs to the judge's process, which the solution cannot reach: swallowing every
    # exception in its own process does not keep the test running past its limit.
    reply = fenced(
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "def grade(score):\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n"
    )
    start = time.perf_counter()
    _, reward, _, info = _step(make_env, reply, test_time_limit_s=0.2, time_limit_s=5.0)
    assert time.perf_counter() - start < 4.0  # well before the execution's 5 s wall limit
    assert (info["outcome"], reward, info["sandbox_status"]) == ("timeout", 0.0, "ok")
    assert info["results"][0]["timed_out"] is True
    assert all(result["error"].startswith("not run") for result in info["results"][1:])


def test_infinite_loop_at_top_level_is_a_timeout(make_env: Any) -> None:
    reply = fenced("def grade(score):\n    return 'A'\n\nwhile True:\n    pass\n")
    _, _, _, info = _step(make_env, reply, test_time_limit_s=0.2)
    assert info["outcome"] == "timeout" and info["results"] == []


def test_a_crash_while_loading_is_an_error(make_env: Any) -> None:
    reply = fenced("import numpy_that_does_not_exist\n\ndef grade(score):\n    return 'A'\n")
    observation, reward, _, info = _step(make_env, reply, error_reward=-0.3, max_turns=2)
    assert (info["outcome"], reward) == ("error", -0.3)
    assert "ModuleNotFoundError" in info["message"] and "line 1 of your code" in observation


@pytest.mark.parametrize("reply", ["", "   ", "I cannot solve this.\n```python\n```"])
def test_no_code_is_its_own_outcome_and_runs_nothing(make_env: Any, reply: str) -> None:
    observation, reward, _, info = _step(make_env, reply, no_code_reward=-0.5)
    assert (info["outcome"], reward, info["sandbox_status"]) == ("no_code", -0.5, None)
    assert "No code found" in observation


def test_missing_entry_point_fails_every_test(make_env: Any) -> None:
    _, reward, _, info = _step(make_env, fenced("def letter(score):\n    return 'A'\n"))
    assert (info["outcome"], reward) == ("failed", 0.0)
    assert info["results"][0]["error"] == "NameError: the code does not define 'grade'"


def test_runtime_errors_name_the_line_of_the_reply(make_env: Any) -> None:
    reply = fenced("def grade(score):\n    table = {}\n    return table[score // 10]\n")
    observation, _, _, info = _step(make_env, reply, max_turns=2)
    assert info["results"][0]["error"] == "KeyError: 9"
    assert "Error (line 3 of your code): KeyError: 9" in observation


def test_exiting_early_gives_no_result(make_env: Any) -> None:
    for exit_call in ("import os\nos._exit(0)", "raise SystemExit(0)"):
        _, reward, _, info = _step(make_env, fenced(f"{exit_call}\ndef grade(score):\n    return 'A'\n"))
        assert (info["outcome"], reward) == ("error", 0.0), exit_call


@pytest.mark.parametrize(
    "body",
    [
        "raise ValueError('bad ' + chr(0xD800))\n\ndef grade(score):\n    return 'A'\n",  # while loading
        "def grade(score):\n    raise ValueError('bad ' + chr(0xDC00))\n",  # in every test
    ],
)
def test_lone_surrogates_of_the_programs_messages_are_replaced(make_env: Any, body: str) -> None:
    # They have no UTF-8 form: an observation holding one could not be printed, tokenized or sent.
    observation, _, _, info = _step(make_env, fenced(body), max_turns=2)
    assert "ValueError: bad \ufffd" in observation
    texts = [info["message"] or "", *(result["error"] or "" for result in info.get("results", []))]
    assert any("bad \ufffd" in text for text in texts)
    for text in [observation, *texts]:
        text.encode("utf-8")
