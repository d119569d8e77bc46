"""``mrlm/Math-v0`` as an env: rewards, feedback, multi-turn, hostile replies, options, checkers."""

from __future__ import annotations

import doctest
import pickle
import re
import subprocess
import sys
import time
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import mrlm.envs
from mrlm.envs.math import LEVELS, TOPICS, MathEnv, generate_task
from mrlm.envs.math import env as env_module
from tests.envs.math.test_records import MIXED


def _answer(env: Any) -> str:
    return str(env.unwrapped.task.answer)


def _wrong(answer: str) -> str:
    return "\\boxed{987654321}" if answer != "987654321" else "\\boxed{5}"


def test_correct_reply_is_rewarded_and_reported() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", level=3, format_reward=0.25)
    env.reset(seed=9)
    observation, reward, terminated, truncated, info = env.step(f"Work... so \\boxed{{{_answer(env)}}}")
    assert (observation, reward, terminated, truncated) == ("Correct.", 1.25, True, False)
    assert info == {
        "correct": True,
        "extracted_answer": _answer(env),
        "answer_source": "boxed",
        "reward_correct": 1.0,
        "reward_format": 0.25,
        "verify_method": "exact",
        "verify_timeout": False,
        "verify_error": None,
        "turn": 1,
    }


def test_format_reward_follows_the_box_not_the_correctness() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", topics="integers", level=1, correct_reward=2.0, format_reward=0.5)
    env.reset(seed=1)
    _, reward, _, _, info = env.step(f"The answer is {_answer(env)}")
    assert (reward, info["reward_correct"], info["reward_format"], info["answer_source"]) == (
        2.0,
        2.0,
        0.0,
        "answer_is",
    )
    env.reset(seed=1)
    _, reward, _, _, info = env.step(_wrong(_answer(env)))
    assert (reward, info["correct"], info["reward_format"]) == (0.5, False, 0.5)


def _episode_return(replies_before: int, *, answer_last: bool) -> tuple[float, list[float]]:
    """The return of an 8-turn episode: ``replies_before`` wrong boxed replies, then the right one."""
    env = mrlm.envs.make("mrlm/Math-v0", level=1, topics="arithmetic", max_turns=8, format_reward=0.1)
    env.reset(seed=0)
    replies = [_wrong(_answer(env))] * replies_before
    if answer_last:
        replies.append(f"\\boxed{{{_answer(env)}}}")
    formats, total, terminated = [], 0.0, False
    for reply in replies:
        assert not terminated
        _, reward, terminated, _, info = env.step(reply)
        total += reward
        formats.append(info["reward_format"])
    assert terminated
    return round(total, 9), formats


def test_format_reward_is_paid_once_per_episode() -> None:
    # Paid on every boxed reply, 7 wrong boxed answers then the right one returned 1.8, and 8 wrong
    # ones 0.8, against 1.1 for the right answer at once.
    assert _episode_return(0, answer_last=True) == (1.1, [0.1])
    assert _episode_return(7, answer_last=True) == (1.1, [0.1] + [0.0] * 7)
    assert _episode_return(8, answer_last=False) == (0.1, [0.1] + [0.0] * 7)
    env = mrlm.envs.make("mrlm/Math-v0", level=1, topics="arithmetic", max_turns=3, format_reward=0.1)
    env.reset(seed=0)
    assert env.step("I am not sure yet.")[4]["reward_format"] == 0.0  # an unboxed reply leaves it
    assert env.step(_wrong(_answer(env)))[4]["reward_format"] == 0.1
    env.reset(seed=0)  # a new episode pays it again
    assert env.step(f"\\boxed{{{_answer(env)}}}")[1] == pytest.approx(1.1)


@pytest.mark.parametrize("topic", TOPICS)
def test_every_topic_accepts_its_own_answer_and_common_rewrites(topic: str) -> None:
    env = MathEnv(topics=topic, max_turns=1)
    for seed in range(30):
        env.reset(seed=seed)
        answer = _answer(env)
        assert env.step(f"\\boxed{{{answer}}}")[1] == 1.0, (env.task, answer)
        env.reset(seed=seed)
        rewrite = answer.replace("\\infty", "oo").replace(", ", ",")
        assert env.step(f"Thus the answer is ${rewrite}$.")[1] == 1.0, (env.task, rewrite)


def test_wrong_answers_get_feedback_that_never_reveals_the_answer() -> None:
    envs = [MathEnv(max_turns=3), MathEnv(records=MIXED, max_turns=3)]
    for env in envs:
        for seed in range(300 if env.records is None else 10):
            env.reset(seed=seed)
            answer = _answer(env)
            replies = [_wrong(answer), "no idea", _wrong(answer)]
            for turn, reply in enumerate(replies, start=1):
                observation, reward, terminated, _, info = env.step(reply)
                assert reward == 0.0 and not info["correct"]
                assert answer not in observation and not any(ch.isdigit() for ch in observation), observation
                assert terminated == (turn == 3)
            assert "No attempts left" in observation


def test_multi_turn_second_attempt_can_succeed() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", level=2, max_turns=2)
    env.reset(seed=4)
    observation, reward, terminated, _, _ = env.step(_wrong(_answer(env)))
    assert (reward, terminated) == (0.0, False) and "try again" in observation
    observation, reward, terminated, _, _ = env.step(f"\\boxed{{{_answer(env)}}}")
    assert (observation, reward, terminated) == ("Correct.", 1.0, True)


def test_reply_without_answer_is_told_how_to_answer() -> None:
    env = mrlm.envs.make("mrlm/Math-v0", max_turns=2)
    env.reset(seed=0)
    observation, reward, _, _, info = env.step("hmm")
    assert reward == 0.0 and info["extracted_answer"] is None and "\\boxed" in observation
    assert info["verify_method"] == "none"


HOSTILE = [
    "9" * 65_536,
    "x" * 65_000 + "\\boxed{",
    "\\boxed{" * 9_000,
    "{" * 30_000 + "}" * 10,
    "}" * 30_000,
    "\\boxed{\\frac{\\frac{\\frac{",
    "\\boxed{}" * 5_000,
    "#### " * 10_000,
    "the answer is " * 4_000,
    "答案是 ٣ 🙂 \u202e\u0000 ≥ ∞ \U0001d7d9\U0001d7da",
    "\\boxed{" + "1/" * 400 + "1}",
    "\\boxed{" + "(" * 600 + ")" * 600 + "}",
    "\ud800 lone surrogate",
    "1,2,3,4,5,6," * 2_000,
    "-" * 50_000 + "5",
    ".5" * 20_000,
]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_hostile_replies_never_raise_and_score_nothing(index: int) -> None:
    env = MathEnv(verify_timeout=2.0, format_reward=0.0)
    env.reset(seed=0, options={"topic": "linear_system"})  # a pair: no stray number can be right
    start = time.perf_counter()
    observation, reward, terminated, truncated, info = env.step(HOSTILE[index])
    assert reward == 0.0 and info["correct"] is False and terminated and not truncated
    assert isinstance(observation, str)
    assert time.perf_counter() - start < 5.0


def test_a_reply_over_the_action_bound_is_refused_by_the_space() -> None:
    env = MathEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="max_action_length"):
        env.step("x" * 70_000)


def test_reset_info_and_options() -> None:
    env = MathEnv()
    _, info = env.reset(seed=1)
    assert set(info) == {"system_prompt", "level", "topic", "subtopic", "source", "index"}
    assert info["level"] in LEVELS and info["topic"] in TOPICS and info["source"] == "generated"
    assert "boxed" in info["system_prompt"] and info["index"] is None
    _, info = env.reset(seed=1, options={"level": 5, "topic": "linear_equation"})
    assert (info["level"], info["topic"]) == (5, "linear_equation")
    _, info = env.reset(seed=1, options={"topic": "algebra"})
    assert info["topic"] in ("linear_equation", "linear_system", "inequality")
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"index": 0})
    with pytest.raises(ValueError, match=r"options\['level'\]"):
        env.reset(options={"level": 0})
    with pytest.raises(ValueError, match="unknown math topic"):
        env.reset(options={"topic": "calculus"})


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="level must be one of"):
        MathEnv(level=9)
    with pytest.raises(ValueError, match="unknown math topic"):
        MathEnv(topics=["algebra", "poetry"])
    with pytest.raises(ValueError, match="verify_timeout"):
        MathEnv(verify_timeout=0)
    with pytest.raises(ValueError, match="answer_window"):
        MathEnv(answer_window=0)


@pytest.mark.parametrize("level", [2.0, True, np.int64(9), "2"])
def test_a_level_that_is_not_an_int_in_range_is_refused_everywhere(level: object) -> None:
    # 2.0 == 2 and True == 1 to Python; a float level broke task generation, a bool leaked into info.
    with pytest.raises(
        ValueError, match=rf"^level must be one of \(1, 2, 3, 4, 5\) or None, got {re.escape(repr(level))}$"
    ):
        MathEnv(level=level)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"options\['level'\] must be one of"):
        MathEnv().reset(seed=0, options={"level": level})
    with pytest.raises(ValueError, match="level must be one of"):
        generate_task(np.random.default_rng(0), level)  # type: ignore[arg-type]


def test_a_numpy_int_level_is_served_as_a_plain_int() -> None:
    env = MathEnv(level=np.int64(2))
    _, info = env.reset(seed=0)
    assert info["level"] == 2 and type(info["level"]) is int
    _, info = env.reset(seed=0, options={"level": np.int64(3)})
    assert info["level"] == 3 and type(info["level"]) is int


def test_topics_and_level_restrict_episodes() -> None:
    env = MathEnv(level=4, topics=["fractions", "word_problem"])
    seen = set()
    for seed in range(60):
        _, info = env.reset(seed=seed)
        assert info["level"] == 4
        seen.add(info["topic"])
    assert seen == {"fractions", "word_problem"}


def test_same_seed_same_episode_and_seeds_differ() -> None:
    def first(seed: int) -> tuple[str, dict[str, Any]]:
        return gymnasium.make("mrlm/Math-v0").reset(seed=seed)

    assert [first(s) for s in range(20)] == [first(s) for s in range(20)]
    assert len({first(s)[0] for s in range(40)}) > 35


def test_seed_zero_keeps_giving_a_what_is_question_at_low_levels() -> None:
    # Other suites (the wheel smoke test, the registry test) read these two questions.
    for level in (1, 2):
        assert mrlm.envs.make("mrlm/Math-v0", level=level).reset(seed=0)[0].startswith("What is")


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"level": 1},
        {"level": 5, "topics": "algebra"},
        {"topics": ["word_problem", "multi_step"], "max_turns": 3, "format_reward": 0.2},
        {"percent_as_fraction": True, "verify_timeout": 1.0, "answer_window": 100},
        {"records": MIXED, "max_turns": 2},
    ],
)
def test_check_env_passes(kwargs: dict[str, Any]) -> None:
    env = mrlm.envs.make("mrlm/Math-v0", render_mode="ansi", **kwargs)
    check_env(env.unwrapped)


def test_env_pickles_mid_episode() -> None:
    env = MathEnv(max_turns=2)
    env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step("\\boxed{1}") == env.step("\\boxed{1}")


def test_the_docstring_example_runs() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(env_module.MathEnv, "MathEnv", globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 5


def test_importing_the_env_loads_neither_sympy_nor_math_verify_nor_datasets() -> None:
    code = (
        "import sys, mrlm.envs\n"
        "env = mrlm.envs.make('mrlm/Math-v0', records=[{'question': 'q', 'answer': '#### 1'}])\n"
        "env.reset(seed=0); env.step('\\\\boxed{1}')\n"
        "env = mrlm.envs.make('mrlm/Math-v0'); env.reset(seed=0); env.step('\\\\boxed{1}')\n"
        "print(sorted(m for m in ('sympy', 'math_verify', 'datasets', 'torch') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
