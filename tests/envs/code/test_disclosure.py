"""Feedback quotes tests, and later attempts are not scored on what it quoted (mrlm.envs.core.disclosure).

An attempt that returns the answers of the tests it was shown, for their inputs, solves nothing:
it must earn nothing, here checked through ``gymnasium.make`` as a policy would play it.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import pytest

import mrlm.envs  # noqa: F401  (registers the ids)
from mrlm.envs.code import CodeTask, TestStep
from mrlm.envs.code.execution import TestResult, Verdict
from mrlm.envs.core.disclosure import UNQUOTED_FAILURE, TestDisclosure
from mrlm.envs.sandbox import Sandbox


def _verdict(*passed: bool) -> Verdict:
    results = tuple(TestResult(ok, None if ok else "AssertionError: got 0, expected 3") for ok in passed)
    outcome = "passed" if all(passed) else "failed"
    return Verdict(outcome, results, len(results))  # type: ignore[arg-type]


def test_a_test_once_quoted_stops_counting_and_one_is_never_quoted() -> None:
    disclosure = TestDisclosure()
    first = _verdict(False, True, False)
    assert disclosure.scored_fraction(first) == pytest.approx(1 / 3)
    assert disclosure.failing_test_to_quote(first) == 0 and disclosure.quoted == {0}
    second = _verdict(True, False, False)  # the quoted test now passes
    assert disclosure.scored_fraction(second) == 0.0  # tests 1 and 2: none passed
    assert disclosure.failing_test_to_quote(second) == 1 and disclosure.quoted == {0, 1}
    third = _verdict(False, True, False)  # a quoted test fails: quoted again, nothing new shown
    assert disclosure.failing_test_to_quote(third) == 0 and disclosure.quoted == {0, 1}
    fourth = _verdict(True, True, False)  # only the last unquoted test fails: it stays unseen
    assert disclosure.scored_fraction(fourth) == 0.0
    assert disclosure.failing_test_to_quote(fourth) is None and disclosure.quoted == {0, 1}
    assert disclosure.scored_fraction(_verdict(True, True, True)) == 1.0
    assert TestDisclosure().failing_test_to_quote(_verdict(False)) is None  # a single test: never shown


def test_the_same_code_sent_again_never_scores_more() -> None:
    # Dropping a quoted failure from the count would raise it: 2/3, then 2/2.
    disclosure = TestDisclosure()
    verdict = _verdict(True, True, False)
    before = disclosure.scored_fraction(verdict)
    assert disclosure.failing_test_to_quote(verdict) == 2
    assert disclosure.scored_fraction(verdict) == before == pytest.approx(2 / 3)


ADD = CodeTask(
    "add",
    "add",
    "",
    'def add(a: int, b: int) -> int:\n    """The sum."""\n',
    "",
    (
        TestStep("assert add(1, 2) == 3"),
        TestStep("assert add(5, 5) == 10"),
        TestStep("assert add(-4, 1) == -3"),
    ),
)


def _reply(body: str) -> str:
    return f"```python\ndef add(a, b):\n{body}\n```"


def test_returning_the_quoted_answers_earns_nothing_and_solving_still_pays(sandbox: Sandbox) -> None:
    env = gymnasium.make("mrlm/Code-v0", records=[ADD], max_turns=4)
    env.unwrapped.__dict__["_sandbox"] = sandbox
    env.reset(seed=0)
    rewards: list[float] = []
    quoted: list[list[int]] = []

    def play(body: str) -> tuple[str, dict[str, Any], bool]:
        observation, reward, terminated, _, info = env.step(_reply(body))
        rewards.append(float(reward))
        quoted.append(info["quoted_tests"])
        return observation, info, terminated

    observation, _, _ = play("    return 0")
    assert "assert add(1, 2) == 3" in observation
    observation, info, _ = play("    return 3 if (a, b) == (1, 2) else 0")
    assert info["passed"] == 1 and "assert add(5, 5) == 10" in observation
    observation, info, terminated = play("    return {(1, 2): 3, (5, 5): 10}.get((a, b), 0)")
    # Two of three tests pass, both by their quoted answers: the score counts the unseen one only,
    # and the feedback does not show it.
    assert info["passed"] == 2 and info["score"] == 0.0 and terminated is False
    assert "add(-4, 1)" not in observation and "-3" not in observation
    assert UNQUOTED_FAILURE in observation
    _, info, terminated = play("    return a + b")
    assert rewards == [0.0, 0.0, 0.0, 1.0] and quoted == [[0], [0, 1], [0, 1], [0, 1]]
    assert info["all_passed"] is True and terminated is True


def test_a_single_test_is_never_shown(sandbox: Sandbox) -> None:
    task = CodeTask(
        "one", "one", "", "def one() -> int:\n    pass\n", "", (TestStep("assert one() == 1234"),)
    )
    env = gymnasium.make("mrlm/Code-v0", records=[task], max_turns=3)
    env.unwrapped.__dict__["_sandbox"] = sandbox
    env.reset(seed=0)
    observation, _, _, _, info = env.step("```python\ndef one():\n    return 0\n```")
    assert "1234" not in observation and UNQUOTED_FAILURE in observation
    assert info["quoted_tests"] == []
    # Nor the exception's name, which code could pick by the input it was given.
    observation, _, _, _, _ = env.step("```python\ndef one():\n    raise KeyError('which input?')\n```")
    assert (
        UNQUOTED_FAILURE in observation and "KeyError" not in observation and "which input" not in observation
    )
