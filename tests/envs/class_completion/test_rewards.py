"""Scripted teams on ``Inventory``: the order of their rewards, penalties, hand-checked components.

Default weights: coverage 0.2, tests 0.6, balance 0.2; idle penalty 0.2, overwrite penalty 0.1.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.envs.class_completion.replies import DEAL, SEED, TASK, WRONG, methods, whole_class


def _round(make_env: Any, actions: dict[str, str], **kwargs: Any) -> tuple[dict[str, float], dict[str, Any]]:
    env = make_env(**kwargs)
    _, infos = env.reset(seed=SEED, options=TASK)
    if kwargs.get("assignment", "env") == "env":
        assert {agent: info["assigned"] for agent, info in infos.items()} == DEAL
    _, rewards, _, _, infos = env.step(actions)
    return rewards, infos


def test_a_balanced_correct_split_scores_one_for_everyone(make_env: Any) -> None:
    rewards, infos = _round(make_env, {agent: methods(names) for agent, names in DEAL.items()})
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0}
    info = infos["agent_0"]
    assert info["components"] == {"coverage": 1.0, "tests": 1.0, "balance": 1.0}
    assert (info["passed"], info["total"], info["outcome"]) == (10, 10, "passed")
    assert info["counts"] == {"agent_0": 2, "agent_1": 2} and info["penalties"] == {
        "agent_0": 0.0,
        "agent_1": 0.0,
    }
    assert info["owners"] == {
        "add_item": "agent_0",
        "remove_item": "agent_1",
        "quantity": "agent_0",
        "most_stocked": "agent_1",
    }


def test_an_agent_doing_nothing_lowers_the_team_and_pays_the_idle_penalty(make_env: Any) -> None:
    rewards, infos = _round(make_env, {"agent_0": methods(DEAL["agent_0"]), "agent_1": ""})
    info = infos["agent_1"]
    # Six tests pass: add_item's two, quantity's two, and one each of remove_item and most_stocked,
    # whose stubs return None where None is expected.
    assert info["components"] == pytest.approx({"coverage": 0.5, "tests": 0.6, "balance": 0.0})
    assert (info["idle"], info["penalty"], infos["agent_0"]["idle"]) == (True, 0.2, False)
    team = 0.2 * 0.5 + 0.6 * 0.6
    assert rewards == pytest.approx({"agent_0": team, "agent_1": team - 0.2})
    assert rewards["agent_0"] < 1.0


def test_overwriting_a_teammates_method_is_dropped_and_penalised(make_env: Any) -> None:
    mine = methods(DEAL["agent_0"]) + methods(DEAL["agent_1"], WRONG)
    rewards, infos = _round(make_env, {"agent_0": mine, "agent_1": methods(DEAL["agent_1"])})
    assert infos["agent_0"]["overwrites"] == ["remove_item", "most_stocked"]
    assert infos["agent_1"]["overwrites"] == [] and "'wrong'" not in infos["agent_0"]["program"]
    assert infos["agent_0"]["components"] == {"coverage": 1.0, "tests": 1.0, "balance": 1.0}
    assert rewards == pytest.approx({"agent_0": 1.0 - 2 * 0.1, "agent_1": 1.0})


def test_echoing_the_skeletons_stubs_is_not_an_overwrite(make_env: Any) -> None:
    rewards, infos = _round(make_env, {agent: whole_class(names) for agent, names in DEAL.items()})
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0}
    assert infos["agent_0"]["overwrites"] == [] and infos["agent_0"]["accepted"] == ["add_item", "quantity"]


def test_agents_claim_methods_by_implementing_them_first(make_env: Any) -> None:
    split = {
        "agent_0": methods(["add_item", "remove_item"]),
        "agent_1": methods(["quantity", "most_stocked"]),
    }
    rewards, infos = _round(make_env, split, assignment="agents")
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0}
    assert infos["agent_0"]["owners"]["quantity"] == "agent_1"

    # Both write everything: the first agent in order claims all; the other only overwrites.
    everything = methods(["add_item", "remove_item", "quantity", "most_stocked"])
    rewards, infos = _round(make_env, {"agent_0": everything, "agent_1": everything}, assignment="agents")
    assert infos["agent_1"]["components"] == {"coverage": 1.0, "tests": 1.0, "balance": 0.0}
    assert infos["agent_1"]["overwrites"] == ["add_item", "remove_item", "quantity", "most_stocked"]
    assert rewards == pytest.approx({"agent_0": 0.8, "agent_1": 0.8 - 4 * 0.1 - 0.2})


def test_rewards_order_the_teams(make_env: Any) -> None:
    balanced = _round(make_env, {agent: methods(names) for agent, names in DEAL.items()})[0]
    everything = methods(["add_item", "remove_item", "quantity", "most_stocked"])
    solo = _round(make_env, {"agent_0": everything, "agent_1": ""}, assignment="agents")[0]
    idle = _round(make_env, {"agent_0": methods(DEAL["agent_0"]), "agent_1": ""})[0]
    empty = _round(make_env, {"agent_0": "", "agent_1": ""})[0]
    for agent in ("agent_0", "agent_1"):
        assert balanced[agent] > solo[agent] > idle[agent] > empty[agent]
    assert empty == pytest.approx({"agent_0": -0.2, "agent_1": -0.2})  # nothing at all: both idle


def test_the_class_carries_over_between_rounds(make_env: Any) -> None:
    env = make_env(max_turns=3)
    env.reset(seed=SEED, options=TASK)
    observations, first, terminations, _, _ = env.step({"agent_0": methods(DEAL["agent_0"]), "agent_1": ""})
    text = observations["agent_1"]["text"]
    assert text.startswith(
        "Round 1: 6 of 10 tests passed (coverage 0.50, tests 0.60, balance 0.00); your penalty 0.20."
    )
    assert "`remove_item`: agent_1, missing" in text and "# agent_0 writes add_item" in text
    assert "Failing test:\n    # InventoryTestRemoveItem\n    def test_remove_item_1(self):" in text
    assert terminations["agent_0"] is False
    # agent_0 sends nothing new: its methods stay; agent_1 completes the class.
    observations, second, terminations, _, infos = env.step(
        {"agent_0": "", "agent_1": methods(DEAL["agent_1"])}
    )
    assert terminations == {"agent_0": True, "agent_1": True} and infos["agent_0"]["all_passed"] is True
    assert first["agent_0"] + second["agent_0"] == pytest.approx(1.0)
    assert first["agent_1"] + second["agent_1"] == pytest.approx(1.0 - 0.2)  # the idle round stays paid
    assert observations["agent_0"]["text"].startswith("Round 2: all 10 tests passed")


def test_nothing_implemented_runs_no_test(make_env: Any) -> None:
    _, infos = _round(make_env, {"agent_0": whole_class([]), "agent_1": "no idea"})
    info = infos["agent_0"]
    assert info["implemented"] == [] and info["passed"] == 0
    assert info["results"][0]["error"] == "not run: no method of the class is implemented"


def test_weights_and_penalties_are_configurable_and_checked(make_env: Any) -> None:
    rewards, _ = _round(
        make_env,
        {"agent_0": methods(DEAL["agent_0"]), "agent_1": ""},
        weights={"coverage": 1.0, "tests": 0.0, "balance": 0.0},
        idle_penalty=0.5,
    )
    assert rewards == pytest.approx({"agent_0": 0.5, "agent_1": 0.0})
    with pytest.raises(ValueError, match="unknown reward component 'speed'"):
        make_env(weights={"speed": 1.0})
    with pytest.raises(ValueError, match="assignment must be one of"):
        make_env(assignment="random")
    with pytest.raises(ValueError, match="penalty must be >= 0"):
        make_env(idle_penalty=-1)


def test_a_quoted_test_no_longer_counts_in_the_tests_component(make_env: Any) -> None:
    env = make_env(max_turns=3)
    env.reset(seed=SEED, options=TASK)
    _, _, _, _, infos = env.step({"agent_0": methods(DEAL["agent_0"]), "agent_1": ""})
    (quoted,) = infos["agent_0"]["quoted_tests"]  # remove_item's first test, shown in the feedback
    assert infos["agent_0"]["components"]["tests"] == pytest.approx(0.6)  # nothing was quoted before
    _, _, _, _, infos = env.step({"agent_0": "", "agent_1": methods(["remove_item"])})
    info = infos["agent_0"]
    assert info["results"][quoted]["passed"] is True and not info["all_passed"]
    # The quoted test counts as failed until all pass: its passing adds nothing.
    unquoted_passed = sum(result["passed"] for index, result in enumerate(info["results"]) if index != quoted)
    assert info["components"]["tests"] == pytest.approx(unquoted_passed / 10)
    assert info["components"]["tests"] < info["passed"] / 10
