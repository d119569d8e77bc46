"""Scripted teams on ``digital_root``: the order of their rewards, hand-checked components, and turns.

Default weights: defined 0.1, compiles 0.1, tests 0.5, uses 0.3.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.envs.coop_code.replies import (
    HELPER,
    HELPER_SHELL,
    MAIN,
    MAIN_ALONE,
    MAIN_IGNORING,
    MAIN_LOOPING,
    MAIN_OFF_BY_ONE,
    TASK,
    fenced,
    team,
)


def _attempt(
    make_env: Any, actions: dict[str, str], **kwargs: Any
) -> tuple[dict[str, float], dict[str, Any]]:
    env = make_env(**kwargs)
    env.reset(seed=0, options=TASK)
    _, rewards, _, _, infos = env.step(actions)
    assert rewards["helper"] == rewards["main"]  # one team, one reward
    assert infos["helper"] == infos["main"]
    return rewards, infos["main"]


def test_rewards_order_the_teams(make_env: Any) -> None:
    scores = {
        name: _attempt(make_env, actions)[0]["main"]
        for name, actions in {
            "correct": team(HELPER, MAIN),
            "broken": team(HELPER, MAIN_OFF_BY_ONE),
            "ignores helper": team(HELPER, MAIN_ALONE),
            "hostile": team(HELPER_SHELL, MAIN_LOOPING),
            "empty": team("", ""),
        }.items()
    }
    assert (
        scores["correct"] > scores["broken"] > scores["ignores helper"] > scores["hostile"] > scores["empty"]
    )
    # Hand-derived: broken = 0.1 + 0.1 + 0.5 * 5/6 + 0.3; alone = 0.1 + 0.1 + 0.5; hostile: both parts
    # defined and compiling (0.2), no test passes (the loop times out), the helper is never called.
    assert scores == pytest.approx(
        {"correct": 1.0, "broken": 0.5 + 0.5 * 5 / 6, "ignores helper": 0.7, "hostile": 0.2, "empty": 0.0},
        abs=1e-12,
    )


def test_components_and_info_of_a_broken_attempt(make_env: Any) -> None:
    _, info = _attempt(make_env, team(HELPER, MAIN_OFF_BY_ONE))
    assert info["components"] == pytest.approx({"defined": 1.0, "compiles": 1.0, "tests": 5 / 6, "uses": 1.0})
    assert (info["outcome"], info["passed"], info["total"], info["all_passed"]) == ("failed", 5, 6, False)
    assert [result["passed"] for result in info["results"]] == [True, True, True, True, False, True]
    assert info["results"][4]["error"] == "AssertionError: got 10, expected 1"
    assert info["usages"] == {"digital_root -> digit_sum": "used"}
    assert info["parts"]["main"] == {
        "function": "digital_root",
        "defined": True,
        "parses": True,
        "dropped": [],
    }
    assert "# helper writes digit_sum" in info["program"] and "# main writes digital_root" in info["program"]


def test_calling_the_helper_and_ignoring_its_result_earns_no_use(make_env: Any) -> None:
    rewards, info = _attempt(make_env, team(HELPER, MAIN_IGNORING))
    assert info["usages"] == {"digital_root -> digit_sum": "result_ignored"}
    assert info["components"]["tests"] == 1.0 and info["components"]["uses"] == 0.0
    assert rewards["main"] == pytest.approx(0.7)


def test_a_copy_of_the_helper_by_main_is_dropped(make_env: Any) -> None:
    wrong_copy = "def digit_sum(n):\n    return 0\n\n"
    rewards, info = _attempt(make_env, team(HELPER, wrong_copy + MAIN))
    assert info["parts"]["main"]["dropped"] == ["digit_sum"]
    assert "return 0" not in info["program"]
    assert rewards["main"] == pytest.approx(1.0)  # the helper's own version stands

    # Without a helper, main's copy does not count: the program lacks digit_sum, and only the two
    # tests with a one-digit input (no call needed) pass.
    _, info = _attempt(make_env, team("", wrong_copy + MAIN))
    assert info["components"] == pytest.approx({"defined": 0.5, "compiles": 0.0, "tests": 2 / 6, "uses": 0.0})
    assert info["usages"] == {"digital_root -> digit_sum": "helper_not_defined"}
    assert info["results"][2]["error"] == "NameError: name 'digit_sum' is not defined"


def test_hidden_and_global_rebinding_of_a_teammate_function_is_dropped(make_env: Any) -> None:
    hidden = "if True:\n    def digit_sum(n):\n        return 0\n\n"
    rebinding = "def grab():\n    global digit_sum\n    digit_sum = len\n\n"
    _, info = _attempt(make_env, team(HELPER, hidden + rebinding + MAIN))
    assert info["parts"]["main"]["dropped"] == ["digit_sum"]
    assert info["components"]["tests"] == 1.0 and "grab" not in info["program"]


def test_a_bare_body_completes_the_stub(make_env: Any) -> None:
    rewards, info = _attempt(
        make_env, {"helper": fenced(HELPER), "main": "while n >= 10:\n    n = digit_sum(n)\nreturn n"}
    )
    assert info["parts"]["main"]["defined"] is True
    assert rewards["main"] == pytest.approx(1.0)


def test_a_failed_attempt_shows_the_program_and_the_failing_test_then_the_fix_ends_the_episode(
    make_env: Any,
) -> None:
    env = make_env(max_turns=3)
    env.reset(seed=0, options=TASK)
    observations, rewards, terminations, _, infos = env.step(team(HELPER, MAIN_OFF_BY_ONE))
    first = rewards["helper"]
    assert terminations == {"helper": False, "main": False}
    text = observations["helper"]["text"]
    assert text.startswith(
        "Attempt 1: 5 of 6 tests passed. (defined 1.00, compiles 1.00, tests 0.83, uses 1.00)"
    )
    assert "The team's program:\n```python\n# helper writes digit_sum\n" in text
    assert (
        "Failing test:\n    assert digital_root(10) == 1\nError: AssertionError: got 10, expected 1" in text
    )
    assert text.endswith(
        "Reply with the new version of your function `digit_sum` in one ```python code block."
    )
    assert observations["main"]["text"].endswith("function `digital_root` in one ```python code block.")

    observations, rewards, terminations, truncations, infos = env.step(team(HELPER, MAIN))
    # The reward is the improvement: the episode's return is the last attempt's score.
    assert first + rewards["main"] == pytest.approx(1.0)
    assert terminations == {"helper": True, "main": True} and truncations == {"helper": False, "main": False}
    assert observations["main"]["text"].startswith("Attempt 2: all 6 tests passed.")
    assert infos["main"]["turn"] == 2 and env.agents == []


def test_the_turn_budget_ends_the_episode(make_env: Any) -> None:
    env = make_env(max_turns=2)
    env.reset(seed=0, options=TASK)
    observations, rewards, terminations, _, _ = env.step(team("", ""))
    assert terminations["main"] is False and rewards["main"] == 0.0
    assert "`helper` wrote no code." in observations["main"]["text"]
    observations, rewards, terminations, _, infos = env.step(team(HELPER, MAIN_OFF_BY_ONE))
    # The first attempt's feedback quoted a test, which counts as failed until all pass: 5 of the 6
    # tests pass, the quoted one among them, so 4 of 6 count.
    assert infos["main"]["passed"] == 5 and infos["main"]["results"][0]["passed"] is True
    assert terminations["main"] is True and rewards["main"] == pytest.approx(0.5 + 0.5 * 4 / 6)
    assert observations["main"]["text"].endswith("No attempts left.")
    assert "The team's program" not in observations["main"]["text"]


def test_passing_without_the_helper_ends_the_episode_and_says_why_the_score_is_lower(make_env: Any) -> None:
    env = make_env(max_turns=2)
    env.reset(seed=0, options=TASK)
    observations, rewards, terminations, _, _ = env.step(team(HELPER, MAIN_ALONE))
    assert terminations["main"] is True and rewards["main"] == pytest.approx(0.7)
    assert observations["main"]["text"] == (
        "Attempt 1: all 6 tests passed. (defined 1.00, compiles 1.00, tests 1.00, uses 0.00)\n"
        "`digital_root` never calls `digit_sum`."
    )


def test_weights_are_configurable_and_checked(make_env: Any) -> None:
    rewards, _ = _attempt(make_env, team(HELPER, MAIN_ALONE), weights={"uses": 0.0, "tests": 0.8})
    assert rewards["main"] == pytest.approx(0.1 + 0.1 + 0.8)
    with pytest.raises(ValueError, match="unknown reward component 'style'"):
        make_env(weights={"style": 1.0})
    with pytest.raises(ValueError, match="must be a finite number"):
        make_env(weights={"tests": -1.0})
