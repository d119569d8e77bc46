"""``DatasetTaskEnv``: the checker, turns and transitions, the team reward by hand, seeding, the CoMLRL
adapters against functions written the way CoMLRL runs write them, and clear errors for bad inputs."""

from __future__ import annotations

import doctest
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

import mrlm.envs
from mrlm.envs import DatasetTaskEnv
from mrlm.envs.dataset_task import TaskFunctionError, comlrl_reward, comlrl_transition
from mrlm.envs.dataset_task import env as dataset_task_env

RECORDS = [
    {"prompt": "Add the numbers.", "a": 2, "b": 3},
    {"prompt": "Add the numbers.", "a": 10, "b": -4},
    {"prompt": "Add the numbers.", "a": 0, "b": 7},
]
FORMATTERS = [lambda r: f"Your number is {r['a']}.", lambda r: f"Your number is {r['b']}."]


def _sum_reward(replies: list[str], record: Mapping[str, Any]) -> float:
    """1 when the replies, read as integers, add up to a + b; 0 otherwise (or when one is not an integer)."""
    try:
        return float(sum(int(reply) for reply in replies) == record["a"] + record["b"])
    except ValueError:
        return 0.0


def _revise(record: Mapping[str, Any], prompts: list[list[str]], replies: list[list[str]]) -> list[str]:
    """Each agent is shown its teammate's last reply and asked again."""
    return [f"Your teammate said {replies[1 - k][-1]}. {prompts[k][0]}" for k in range(2)]


def _env(**kwargs: Any) -> DatasetTaskEnv:
    arguments: dict[str, Any] = {"records": RECORDS, "formatters": FORMATTERS, "reward": _sum_reward}
    return DatasetTaskEnv(**{**arguments, **kwargs})


# The checker, turns and rewards -----------------------------------------------------------------------


@pytest.mark.parametrize("num_turns", [1, 3])
def test_parallel_api_test_and_seed_test(num_turns: int) -> None:
    kwargs: dict[str, Any] = {"num_turns": num_turns, "transition": _revise}
    parallel_api_test(_env(**kwargs), num_cycles=20)
    parallel_seed_test(lambda: _env(**kwargs))


def test_the_docstring_example_runs_as_written() -> None:
    outcome = doctest.testmod(dataset_task_env, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0


def test_exported_from_mrlm_envs_and_not_registered() -> None:
    assert mrlm.envs.DatasetTaskEnv is DatasetTaskEnv and "DatasetTaskEnv" in mrlm.envs.__all__
    assert not any("DatasetTask" in entry.id for entry in mrlm.envs.list_envs())


def test_a_two_turn_episode_with_a_transition() -> None:
    seen: list[tuple[dict[str, Any], list[list[str]], list[list[str]]]] = []

    def transition(
        record: Mapping[str, Any], prompts: list[list[str]], replies: list[list[str]]
    ) -> list[str]:
        seen.append((dict(record), prompts, replies))
        return _revise(record, prompts, replies)

    env = _env(num_turns=2, transition=transition, agents=["left", "right"], render_mode="ansi")
    observations, infos = env.reset(seed=1)  # record 1: a = 10, b = -4
    assert observations == {"left": {"text": "Your number is 10."}, "right": {"text": "Your number is -4."}}
    assert infos == {"left": {"index": 1}, "right": {"index": 1}}

    observations, rewards, terminations, truncations, infos = env.step({"left": "10", "right": "4"})
    assert rewards == {"left": 0.0, "right": 0.0}  # 10 + 4 != 6
    assert terminations == truncations == {"left": False, "right": False}
    assert infos["left"] == {"index": 1, "turn": 1}
    assert observations["left"]["text"] == "Your teammate said 4. Your number is 10."
    assert observations["right"]["text"] == "Your teammate said 10. Your number is -4."
    assert seen == [(RECORDS[1], [["Your number is 10."], ["Your number is -4."]], [["10"], ["4"]])]

    observations, rewards, terminations, _, infos = env.step({"left": "10", "right": "-4"})
    assert rewards == {"left": 1.0, "right": 1.0} and terminations == {"left": True, "right": True}
    assert observations == {"left": {"text": ""}, "right": {"text": ""}} and env.agents == []
    assert len(seen) == 1  # no transition after the last turn
    assert env.prompts[0] == ["Your number is 10.", "Your teammate said 4. Your number is 10."]
    assert env.replies == [["10", "10"], ["4", "-4"]]
    transcript = env.render()
    assert transcript is not None and "[reward]\nturn 1: 0\n" in transcript and "turn 2: 1" in transcript


def test_the_reward_is_called_once_per_joint_reply_with_replies_in_agent_order() -> None:
    calls: list[tuple[list[str], dict[str, Any]]] = []

    def reward(replies: list[str], record: Mapping[str, Any]) -> float:
        calls.append((replies, dict(record)))
        # By hand: "7" has 1 character, "abc" 3, "" 0; weighted 1, 10, 100 by position: 1 + 30 + 0 = 31.
        return sum(len(reply) * 10**k for k, reply in enumerate(replies))

    env = DatasetTaskEnv(RECORDS, [FORMATTERS[0]] * 3, reward, agents=["c", "a", "b"])
    env.reset(seed=2)
    _, rewards, *_ = env.step({"a": "abc", "b": "", "c": "7"})
    assert rewards == {"c": 31.0, "a": 31.0, "b": 31.0}
    assert calls == [(["7", "abc", ""], RECORDS[2])]


def test_the_system_prompt_is_every_agent_s_reset_info() -> None:
    _, infos = _env(system_prompt="Work together.").reset(seed=0)
    assert infos == {
        agent: {"index": 0, "system_prompt": "Work together."} for agent in ("agent_0", "agent_1")
    }


def test_functions_get_copies_so_the_env_s_records_never_change() -> None:
    records = [{"items": [1, 2]}]

    def greedy(replies: list[str], record: Mapping[str, Any]) -> float:
        record["items"].append(99)
        return 0.0

    env = DatasetTaskEnv(records, [lambda r: str(r["items"])], greedy)
    records[0]["items"].append(3)  # the caller's list, changed after construction
    for _ in range(2):
        observations, _ = env.reset(seed=0)
        assert observations["agent_0"]["text"] == "[1, 2]"
        env.step({"agent_0": "x"})
    assert env.records == [{"items": [1, 2]}]


# Seeding ----------------------------------------------------------------------------------------------


def test_a_seed_picks_its_record_and_index_options_pick_one_directly() -> None:
    env = _env()
    assert [env.reset(seed=seed)[1]["agent_0"]["index"] for seed in range(6)] == [0, 1, 2, 0, 1, 2]
    assert env.reset(seed=0, options={"index": 2})[1]["agent_0"]["index"] == 2
    assert env.reset(options={"index": 1, "other": "ignored"})[1]["agent_0"]["index"] == 1
    for bad in (3, -1, True, "1"):
        with pytest.raises(ValueError, match="index"):
            env.reset(options={"index": bad})


def test_unseeded_resets_continue_the_seeded_stream() -> None:
    first, second = _env(), _env()

    def indices(env: DatasetTaskEnv) -> list[int]:
        env.reset(seed=4)
        return [env.reset()[1]["agent_0"]["index"] for _ in range(12)]

    assert indices(first) == indices(second)
    assert set(indices(first)) == {0, 1, 2}


def test_records_from_a_jsonl_file(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS))
    observations, _ = _env(records=path).reset(seed=1)
    assert observations["agent_0"]["text"] == "Your number is 10."


# The CoMLRL adapters ----------------------------------------------------------------------------------


def comlrl_sum_reward(
    completion_0: list[str], completion_1: list[str], batch_items: list[dict[str, Any]]
) -> list[float]:
    """Written as a CoMLRL reward function: one list of completions per agent, records as batch_items."""
    rewards = []
    for first, second, item in zip(completion_0, completion_1, batch_items, strict=True):
        rewards.append(1.0 if int(first) + int(second) == item["a"] + item["b"] else -0.5)
    return rewards


def comlrl_length_reward(*agent_completions: list[str]) -> list[float]:
    """A CoMLRL reward function without batch_items: shorter joint replies score higher."""
    lengths = [
        sum(len(completions[i]) for completions in agent_completions)
        for i in range(len(agent_completions[0]))
    ]
    return [1.0 / (1 + length) for length in lengths]


def comlrl_feedback_transition(
    prompt: str,
    agent_completions: list[str],
    num_agents: int,
    prompt_history_per_agent: list[list[str]] | None = None,
    response_history_per_agent: list[list[str]] | None = None,
) -> tuple[str, ...]:
    """Written as a CoMLRL external_transition: the task, then what every agent answered last."""
    assert prompt_history_per_agent is not None and response_history_per_agent is not None
    assert len(agent_completions) == num_agents == len(prompt_history_per_agent)
    turn = len(response_history_per_agent[0])
    answers = ", ".join(agent_completions)
    return tuple(f"{prompt} Turn {turn + 1}. Answers so far: {answers}." for _ in range(num_agents))


def test_comlrl_reward_with_batch_items() -> None:
    reward = comlrl_reward(comlrl_sum_reward)
    assert reward(["2", "3"], RECORDS[0]) == 1.0
    assert reward(["2", "4"], RECORDS[0]) == -0.5
    env = _env(reward=reward)
    env.reset(seed=1)
    _, rewards, *_ = env.step({"agent_0": "6", "agent_1": "0"})
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0}  # 6 + 0 == 10 + -4


def test_comlrl_reward_without_batch_items() -> None:
    reward = comlrl_reward(comlrl_length_reward)
    assert reward(["ab", "c"], RECORDS[0]) == 0.25  # 1 / (1 + 3)
    env = _env(reward=reward)
    env.reset(seed=0)
    _, rewards, *_ = env.step({"agent_0": "", "agent_1": "1234"})
    assert rewards == {"agent_0": 0.2, "agent_1": 0.2}


def test_comlrl_reward_takes_scalars_and_arrays_and_passes_kwargs_functions_the_record() -> None:
    import numpy as np

    assert comlrl_reward(lambda a, b: 0.5)(["x", "y"], {}) == 0.5
    assert comlrl_reward(lambda a, b: np.array([0.25, 9.0]))(["x", "y"], {}) == 0.25
    assert comlrl_reward(lambda *c, **kw: float(kw["batch_items"][0]["a"]))(["x"], {"a": 3}) == 3.0


def test_comlrl_transition_drives_a_two_turn_episode() -> None:
    env = _env(
        num_turns=2,
        transition=comlrl_transition(comlrl_feedback_transition),
        reward=comlrl_reward(comlrl_sum_reward),
    )
    env.reset(seed=0)
    observations, rewards, *_ = env.step({"agent_0": "2", "agent_1": "2"})
    assert rewards == {"agent_0": -0.5, "agent_1": -0.5}
    assert observations["agent_1"]["text"] == "Add the numbers. Turn 2. Answers so far: 2, 2."
    _, rewards, terminations, *_ = env.step({"agent_0": "2", "agent_1": "3"})
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0} and all(terminations.values())


def test_comlrl_transition_without_a_prompt_field_passes_an_empty_prompt() -> None:
    transition = comlrl_transition(comlrl_feedback_transition)
    assert transition({"a": 1}, [["p"], ["q"]], [["r"], ["s"]]) == (" Turn 2. Answers so far: r, s.",) * 2


# Bad inputs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"records": []}, ValueError, "at least one record"),
        ({"records": [{"a": 1}, "not a dict"]}, TypeError, "record 1 must be a mapping"),
        ({"records": {"a": 1}}, TypeError, "one mapping"),
        ({"formatters": []}, TypeError, "formatters"),
        ({"formatters": ["not callable"]}, TypeError, r"formatters\[0\]"),
        ({"agents": ["a", "b", "c"]}, ValueError, "2 formatters for 3 agents"),
        ({"agents": ["a", "a"]}, ValueError, "distinct"),
        ({"num_turns": 2}, ValueError, "num_turns=2 needs a transition"),
        ({"num_turns": 0}, ValueError, "num_turns"),
        ({"reward": "not callable"}, TypeError, "reward"),
        ({"system_prompt": 3}, TypeError, "system_prompt"),
    ],
)
def test_bad_construction_is_a_clear_error(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        _env(**kwargs)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (math.nan, "returned nan"),
        (math.inf, "returned inf"),
        ("1.0", "returned '1.0'"),
        (None, "returned None"),
        (
            10**400,
            "returned a number too large for a float (beyond 1.8e+308 in size)",
        ),  # past float's range: OverflowError in float()
        (-(10**5000), "returned a number too large for a float"),  # and too long for repr() to show
    ],
    ids=["nan", "inf", "text", "none", "huge-int", "huger-int"],
)
def test_a_reward_that_is_not_a_finite_number_names_the_reward_function(value: Any, shown: str) -> None:
    def team_score(replies: list[str], record: Mapping[str, Any]) -> Any:
        return value

    env = _env(reward=team_score)
    env.reset(seed=0)
    with pytest.raises(TaskFunctionError, match="team_score") as raised:
        env.step({"agent_0": "1", "agent_1": "2"})
    assert (
        shown in str(raised.value) and "turn 1" in str(raised.value) and "finite number" in str(raised.value)
    )


def test_errors_raised_by_user_functions_name_the_function_and_the_turn() -> None:
    def broken_reward(replies: list[str], record: Mapping[str, Any]) -> float:
        raise KeyError("score")

    env = _env(reward=broken_reward)
    env.reset(seed=2)
    with pytest.raises(
        TaskFunctionError, match=r"broken_reward.* at turn 1 \(record 2\): KeyError"
    ) as raised:
        env.step({"agent_0": "1", "agent_1": "2"})
    assert isinstance(raised.value.__cause__, KeyError)

    def broken_transition(record: Mapping[str, Any], prompts: Any, replies: Any) -> list[str]:
        if len(replies[0]) == 2:
            raise RuntimeError("no third prompt")
        return ["next", "next"]

    env = _env(num_turns=3, transition=broken_transition)
    env.reset(seed=0)
    env.step({"agent_0": "1", "agent_1": "2"})
    with pytest.raises(TaskFunctionError, match=r"broken_transition.* after turn 2"):
        env.step({"agent_0": "1", "agent_1": "2"})

    env = _env(formatters=[FORMATTERS[0], lambda r: r["missing"]])
    with pytest.raises(TaskFunctionError, match=r"formatter of 'agent_1'.*at turn 1.*KeyError"):
        env.reset(seed=0)

    env = _env(reward=comlrl_reward(comlrl_sum_reward))
    env.reset(seed=0)
    with pytest.raises(
        TaskFunctionError, match=r"comlrl_reward\(comlrl_sum_reward\).* at turn 1.*ValueError"
    ):
        env.step({"agent_0": "two", "agent_1": "3"})


def _fails_once(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, except that its first call raises, as a scoring API that timed out once would."""
    calls = 0

    def fails_once(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("timed out")
        return func(*args)

    return fails_once


@pytest.mark.parametrize("failing", ["reward", "transition"])
def test_a_step_whose_function_raises_changes_nothing_and_a_retry_goes_on_as_if_it_never_failed(
    failing: str,
) -> None:
    functions: dict[str, Any] = {"reward": _sum_reward, "transition": _revise}
    steady = _env(num_turns=3, render_mode="ansi", **functions)
    flaky = _env(num_turns=3, render_mode="ansi", **{**functions, failing: _fails_once(functions[failing])})
    assert flaky.reset(seed=1) == steady.reset(seed=1)  # record 1: a = 10, b = -4

    def state(env: DatasetTaskEnv) -> tuple[Any, ...]:
        return env.prompts, env.replies, env.render(), env.agents

    before = state(flaky)
    with pytest.raises(TaskFunctionError, match=r"(at|after) turn 1"):
        flaky.step({"agent_0": "1", "agent_1": "2"})
    assert state(flaky) == before
    # The retry is turn 1 again; every step after it answers what the env that never failed answers.
    for moves in (
        {"agent_0": "1", "agent_1": "2"},
        {"agent_0": "10", "agent_1": "-4"},
        {"agent_0": "3", "agent_1": "3"},
    ):
        assert flaky.step(moves) == steady.step(moves)
    assert state(flaky) == state(steady) and flaky.agents == []


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (["only one"], "list of 2 prompts"),
        ("a string", "list of 2 prompts"),
        ([1, 2], "returned a prompt of type int"),
    ],
)
def test_a_transition_result_the_env_cannot_use_is_named(result: Any, message: str) -> None:
    env = _env(num_turns=2, transition=lambda record, prompts, replies: result)
    env.reset(seed=0)
    with pytest.raises(TaskFunctionError, match=message) as raised:
        env.step({"agent_0": "1", "agent_1": "2"})
    assert "transition function" in str(raised.value) and "after turn 1" in str(raised.value)


def test_a_formatter_that_returns_no_str_is_named() -> None:
    env = _env(formatters=[FORMATTERS[0], lambda r: r["a"]])
    with pytest.raises(TaskFunctionError, match=r"formatter of 'agent_1'.*returned a prompt of type int"):
        env.reset(seed=0)
