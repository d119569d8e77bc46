"""The env as a Gymnasium env: checkers, seeding, task choice, multi-turn debugging, pickling."""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import mrlm.envs  # noqa: F401  (registers mrlm/Code-v0)
from mrlm.envs.code import CodeEnv, builtin_tasks
from mrlm.envs.code.feedback import SYSTEM_PROMPT
from tests.envs.code.replies import FAST, fenced
from tests.envs.code.test_outcomes import GRADE, PARTIAL, RIGHT
from tests.envs.code.test_records import RECORDS


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"max_turns": 3}, {"records": RECORDS}, {"records": RECORDS, "max_turns": 2}],
    ids=["builtin", "multi-turn", "records", "records multi-turn"],
)
def test_check_env_passes(kwargs: dict[str, Any]) -> None:
    env = gymnasium.make("mrlm/Code-v0", **FAST, **kwargs)  # on the process-wide sandbox
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_registered_id_makes_a_code_env() -> None:
    env = gymnasium.make("mrlm/Code-v0", max_turns=2, time_limit_s=5.0)
    assert isinstance(env.unwrapped, CodeEnv) and env.unwrapped.max_turns == 2
    env.close()


def test_reset_info_and_observation(make_env: Any) -> None:
    env = make_env()
    observation, info = env.reset(seed=5)
    task = env.task
    assert info == {
        "system_prompt": SYSTEM_PROMPT,
        "task_id": task.task_id,
        "entry_point": task.entry_point,
        "source": "builtin",
        "num_tests": len(task.tests),
    }
    assert task.prompt_code.rstrip() in observation and "```python" in observation
    assert not any(test in observation for test in task.tests)  # the tests stay hidden


def test_seeds_choose_tasks_deterministically_and_options_pick_one(make_env: Any) -> None:
    env = make_env()
    first = [env.reset(seed=seed)[1]["task_id"] for seed in range(30)]
    assert first == [env.reset(seed=seed)[1]["task_id"] for seed in range(30)]
    assert len(set(first)) > 10
    tasks = builtin_tasks()
    assert env.reset(options={"task_id": tasks[7].task_id})[1]["task_id"] == tasks[7].task_id
    assert env.reset(seed=1, options={"index": 3})[1]["task_id"] == tasks[3].task_id
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(ValueError, match=r"options\['index'\] must be"):
        env.reset(options={"index": len(tasks)})


def test_multi_turn_debugging_shows_the_failing_test_then_ends_on_success(make_env: Any) -> None:
    env = make_env(records=[GRADE], max_turns=3)
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(fenced(PARTIAL))
    assert (reward, terminated, info["score"]) == (pytest.approx(0.6), False, pytest.approx(0.6))
    assert observation.startswith("3 of 5 tests passed.")
    assert (
        "Failing test:\n    assert grade(90) == 'A'\nError: AssertionError: got 'B', expected 'A'"
        in observation
    )
    assert "reply with the complete corrected solution" in observation

    observation, reward, terminated, _, info = env.step(fenced(RIGHT))
    # The reward is the improvement: the episode's return is the last reply's score.
    assert (reward, terminated, info["score"]) == (pytest.approx(0.4), True, 1.0)
    assert observation == "All 5 tests passed."


def test_a_worse_reply_is_a_negative_reward_and_the_last_turn_hides_the_tests(make_env: Any) -> None:
    env = make_env(records=[GRADE], max_turns=2)
    env.reset(seed=0)
    assert env.step(fenced(PARTIAL))[1] == pytest.approx(0.6)
    observation, reward, terminated, _, info = env.step("no idea")
    assert (info["outcome"], reward, terminated) == ("syntax_error", pytest.approx(-0.6), True)
    assert observation == "Your code has a syntax error; no test ran. No attempts left."


def test_feedback_is_cut_to_feedback_chars(make_env: Any) -> None:
    long_message = "x" * 5000
    reply = fenced(f"def grade(score):\n    raise ValueError({long_message!r})\n")
    env = make_env(records=[GRADE], max_turns=2, feedback_chars=120)
    env.reset(seed=0)
    observation, *_ = env.step(reply)
    detail = observation.split("\n\n")[1]
    assert len(detail) <= 120 and detail.endswith("[... truncated]")
    assert detail.startswith("Failing test:\n    assert grade(95) == 'A'")
    with pytest.raises(ValueError, match="feedback_chars"):
        make_env(feedback_chars=10)


def test_steps_are_deterministic(make_env: Any) -> None:
    replies = [fenced(PARTIAL), "", "def grade(s) return", fenced(RIGHT), fenced(PARTIAL)]

    def rollout() -> list[Any]:
        env = make_env(records=[GRADE, *builtin_tasks()[:3]], max_turns=3)
        trace: list[Any] = [env.reset(seed=11)]
        for reply in replies:
            step = env.step(reply)
            trace.append(step)
            if step[2]:
                trace.append(env.reset())
        return trace

    assert rollout() == rollout()


def test_the_env_pickles_and_the_copy_uses_its_own_sandbox(make_env: Any) -> None:
    env = make_env(records=[GRADE], max_turns=2)
    env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(env))
    assert clone._sandbox is None  # the process-wide one
    assert clone.step(fenced(PARTIAL)) == env.step(fenced(PARTIAL))


def test_render_returns_the_transcript(make_env: Any) -> None:
    env = make_env(records=[GRADE], render_mode="ansi")
    env.reset(seed=0)
    env.step(fenced(RIGHT))
    text = env.render()
    assert text is not None and "[agent]" in text and "All 5 tests passed." in text


def test_info_is_plain_data(make_env: Any) -> None:
    env = make_env(records=[GRADE])
    env.reset(seed=0)
    info = env.step(fenced(PARTIAL))[4]
    assert set(info) >= {
        "outcome",
        "passed",
        "total",
        "pass_fraction",
        "all_passed",
        "results",
        "sandbox_status",
        "message",
        "score",
        "reward_pass",
        "reward_bonus",
        "reward_outcome",
        "turn",
    }
    assert pickle.loads(pickle.dumps(info)) == info
