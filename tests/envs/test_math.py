"""The math env's pieces: the generator's answers are right, extraction and checking are exact."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import mrlm.envs
from mrlm.envs.math import answers_match, extract_answer, generate_task, parse_number
from mrlm.envs.math.tasks import LEVELS


def _independent_answer(question: str) -> Fraction:
    """Solve a generated question a second way: evaluate its expression with Fractions."""
    equation = re.match(r"Solve for x: (-?\d+)x ([+-]) (\d+) = (-?\d+)", question)
    if equation:
        a, sign, b, c = equation.groups()
        offset = int(b) if sign == "+" else -int(b)
        return Fraction(int(c) - offset, int(a))
    match = re.match(r"What is (.+?)\?", question)
    assert match, question
    expression = re.sub(r"(\d+)", r"Fraction(\1)", match.group(1))
    return Fraction(eval(expression, {"Fraction": Fraction}))  # our own generated text only


@pytest.mark.parametrize("level", LEVELS)
def test_generated_answers_are_correct(level: int) -> None:
    rng = np.random.default_rng(level)
    for _ in range(200):
        task = generate_task(rng, level)
        assert task.level == level
        assert parse_number(task.answer) == _independent_answer(task.question), task


def test_generator_is_deterministic_and_validates_level() -> None:
    first = [generate_task(np.random.default_rng(5), 4) for _ in range(3)]
    assert first == [generate_task(np.random.default_rng(5), 4) for _ in range(3)]
    with pytest.raises(ValueError, match="level"):
        generate_task(np.random.default_rng(0), 6)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so the result is \\boxed{\\frac{3}{4}} indeed", "\\frac{3}{4}"),
        ("first \\boxed{1} then \\boxed{2}", "2"),
        ("nested \\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}"),
        ("work\n#### 72\n", "72"),
        ("The answer is 1,000.", "1,000"),
        ("answer: -5", "-5"),
        ("I got 3 then 4 and finally 5", "5"),
        ("no numbers here", None),
        ("broken \\boxed{12", "12"),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("predicted", "gold", "same"),
    [
        ("0.5", "1/2", True),
        ("\\frac{1}{2}", "1/2", True),
        ("\\dfrac{1}{2}", "0.5", True),
        ("1,000", "1000", True),
        ("$12", "12", True),
        ("12 apples", "12", True),
        ("50%", "1/2", True),
        ("-3/4", "-3/4", True),
        ("0.333", "1/3", False),
        ("2x", "2", False),
        ("1,5", "15", False),
        ("1/0", "1", False),
        (None, "1", False),
        ("x<3", "x < 3", True),
    ],
)
def test_answers_match_is_exact(predicted: str | None, gold: str, same: bool) -> None:
    assert answers_match(predicted, gold) is same


def _solve(env: object) -> str:
    return str(env.unwrapped.task.answer)  # type: ignore[attr-defined]


def test_correct_reply_is_rewarded_and_reported() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", level=3, format_reward=0.25)
    env.reset(seed=9)
    observation, reward, terminated, truncated, info = env.step(f"Work... so \\boxed{{{_solve(env)}}}")
    assert (observation, reward, terminated, truncated) == ("Correct.", 1.25, True, False)
    assert info["correct"] is True and info["reward_correct"] == 1.0 and info["reward_format"] == 0.25


def test_wrong_reply_in_multi_turn_gets_feedback_without_the_answer() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", level=2, max_turns=2)
    env.reset(seed=4)
    answer = _solve(env)
    wrong = str(int(answer) + 1)
    observation, reward, terminated, _, info = env.step(f"\\boxed{{{wrong}}}")
    assert (reward, terminated, info["correct"]) == (0.0, False, False)
    assert answer not in observation and "try again" in observation
    observation, reward, terminated, _, _ = env.step(f"\\boxed{{{answer}}}")
    assert (observation, reward, terminated) == ("Correct.", 1.0, True)


def test_reply_without_answer_is_told_how_to_answer() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", max_turns=2)
    env.reset(seed=0)
    observation, reward, _, _, info = env.step("hmm")
    assert reward == 0.0 and info["extracted_answer"] is None and "\\boxed" in observation


def test_reset_info_describes_the_task() -> None:
    _, info = mrlm.envs.make("mrlm/Math-v0", level=5).reset(seed=1)
    assert info["level"] == 5 and info["topic"] == "linear equation" and "boxed" in info["system_prompt"]
