"""``mrlm/ToolUse-v0`` end to end: rewards, records, limits of an episode, determinism, cleanup."""

from __future__ import annotations

import gc
import json
import os
import pickle
import random
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import mrlm.envs
from mrlm.envs.sandbox import Limits
from mrlm.envs.tools import ToolUseEnv
from mrlm.envs.tools.calls import format_tool_call, parse_tool_responses
from mrlm.envs.tools.reference import ReferenceAgent, answer
from mrlm.envs.tools.search import Document

FAST = Limits(wall_time_s=2.0, cpu_time_s=2.0)


def _calc(expression: str) -> str:
    return format_tool_call("calculator", {"expression": expression})


def _env(**kwargs: Any) -> ToolUseEnv:
    kwargs.setdefault("python_limits", FAST)
    return ToolUseEnv(**kwargs)


def _play(env: ToolUseEnv, seed: int, policy: str) -> tuple[float, dict[str, Any]]:
    observation, _ = env.reset(seed=seed)
    assert env.task is not None
    agent = ReferenceAgent(env.task, env.registry.names)
    spam = '<tool_call>{"name": "calculator", "arguments": {"expression": 1}}</tool_call><tool_call>oops'
    total, terminated, info = 0.0, False, dict[str, Any]()
    while not terminated:
        reply = agent.act(observation) if policy == "oracle" else answer("42") if policy == "guess" else spam
        observation, reward, terminated, truncated, info = env.step(reply)
        assert not truncated
        total += reward
    return total, info


@pytest.mark.parametrize(
    "tools",
    [None, ["calculator", "python"], ["search", "calculator"], ["python"], ["files"], ["search"]],
)
def test_the_oracle_solves_tasks_and_beats_guessing_and_spamming(tools: list[str] | None) -> None:
    env = _env(tools=tools)
    rewards: dict[str, list[float]] = {"oracle": [], "guess": [], "spam": []}
    kinds = set()
    for seed in range(25 if tools is None else 12):
        for policy, results in rewards.items():
            total, info = _play(env, seed, policy)
            results.append(total)
            if policy == "oracle":
                assert info["correct"], (env.task, info)
                assert info["malformed_calls"] == 0
        assert env.task is not None
        kinds.add(env.task.kind)
    env.close()
    mean = {policy: sum(values) / len(values) for policy, values in rewards.items()}
    assert mean["oracle"] == pytest.approx(1.1)
    assert mean["guess"] < 0.2 and mean["spam"] < 0 and mean["oracle"] > mean["guess"] > mean["spam"]
    if tools is None:
        assert kinds == {"arithmetic", "lookup", "program", "data", "lookup_compute"}


def test_reward_terms_and_records() -> None:
    env = _env(tools=["calculator"], call_budget=3, max_turns=6)
    env.reset(seed=0)
    assert env.task is not None
    # A tool error is not malformed and earns no bonus.
    observation, reward, terminated, _, info = env.step(_calc("1/0"))
    assert observation == '<tool_response>{"name": "calculator", "error": "division by zero"}</tool_response>'
    assert (reward, terminated, info["reward_tool_use"], info["answered"]) == (0.0, False, 0.0, False)
    # The first success earns the bonus once; a malformed call costs; the third call is the last in budget.
    observation, reward, _, _, info = env.step(
        _calc("2+2") + _calc("3+3") + '<tool_call>{"name": "calculator"}</tool_call>'
    )
    assert [r.get("content", r.get("error")) for r in parse_tool_responses(observation)] == [
        "4",
        "6",
        "invalid arguments: arguments is missing the required argument 'expression'",
    ]
    assert info["reward_tool_use"] == 0.1 and info["reward_malformed"] == -0.05
    assert info["reward_over_budget"] == -0.05  # calls 1-3 are in budget; this reply made calls 2-4
    assert reward == pytest.approx(0.1 - 0.05 - 0.05)
    observation, reward, _, _, info = env.step(_calc("1") + '<tool_call>{"name": "nope"}</tool_call>')
    assert "unknown tool 'nope' (available: calculator)" in observation
    assert (info["reward_tool_use"], info["reward_malformed"], info["reward_over_budget"]) == (
        0.0,
        -0.05,
        -0.1,
    )
    assert info["calls"] == 6 and info["malformed_calls"] == 2
    records = info["tool_calls"]
    assert [(r["turn"], r["name"], r["ok"], r["malformed"]) for r in records] == [
        (1, "calculator", False, False),
        (2, "calculator", True, False),
        (2, "calculator", True, False),
        (2, "calculator", False, True),
        (3, "calculator", True, False),
        (3, "nope", False, True),
    ]
    assert records[1]["arguments"] == {"expression": "2+2"} and records[1]["result"] == "4"
    _, reward, terminated, _, info = env.step(f"<answer>{env.task.answer}</answer>")
    assert (reward, terminated, info["correct"], info["expected_answer"]) == (
        1.0,
        True,
        True,
        env.task.answer,
    )
    assert info["reward_correct"] == 1.0 and len(info["tool_calls"]) == 6


def test_wrong_answers_and_answers_without_tags() -> None:
    env = _env(tools=["calculator"])
    env.reset(seed=1)
    assert env.task is not None
    assert env.step("I think it is 3.")[:3] == ("Incorrect.", 0.0, True)
    env.reset(seed=1)
    observation, reward, *_ = env.step(f"The result is {env.task.answer}")
    assert (observation, reward) == ("Correct.", 1.0)


def test_an_answer_beyond_decimal_range_is_just_wrong() -> None:
    env = _env(tools=["calculator"])
    for text in ("1e999999999", "-1e999999999", "1e99999999999999999999", "nan", "sNaN", "inf"):
        for seed in range(30):
            env.reset(seed=seed)
            assert env.task is not None
            if env.task.answer_type == "number" and env.task.tolerance > 0:
                break
        else:
            pytest.fail("no number task with a tolerance in 30 seeds")
        observation, reward, terminated, _, info = env.step(f"<answer>{text}</answer>")
        assert (observation, reward, terminated, info["correct"]) == ("Incorrect.", 0.0, True, False)


def test_too_many_calls_in_one_reply_are_refused_together() -> None:
    env = _env(tools=["calculator"], max_calls_per_reply=2, call_budget=100)
    env.reset(seed=0)
    observation, reward, *_ = env.step(_calc("1") * 50)
    responses = parse_tool_responses(observation)
    assert len(responses) == 3 and responses[2] == {
        "name": None,
        "error": "too many tool calls in one reply (at most 2); 48 more were not run",
    }
    assert reward == pytest.approx(0.1 - 0.05)


def test_running_out_of_turns_ends_without_an_answer() -> None:
    env = _env(tools=["calculator"], max_turns=2)
    env.reset(seed=0)
    observation, _, terminated, _, _ = env.step(_calc("1"))
    assert not terminated and observation.endswith(
        "One reply left: give your final answer in <answer>...</answer>."
    )
    observation, reward, terminated, _, info = env.step(_calc("2"))
    assert terminated and observation.endswith("No replies left: the episode ended without an answer.")
    assert (info["answered"], info["correct"], info["reward_correct"], reward) == (False, False, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step("<answer>1</answer>")


def test_reset_info_describes_the_tools() -> None:
    env = _env(tools="search, python")
    _, info = env.reset(seed=2)
    assert [spec["function"]["name"] for spec in info["tools"]] == ["search", "python"]
    assert all(
        spec["type"] == "function" and spec["function"]["parameters"]["type"] == "object"
        for spec in info["tools"]
    )
    prompt = info["system_prompt"]
    assert (
        "<tool_call>" in prompt
        and "<tool_response>" in prompt
        and "<answer>" in prompt
        and "6 replies" in prompt
    )
    assert json.loads(prompt.split("Available tools:\n")[1]) == info["tools"]
    assert info["kind"] in {"lookup", "program", "data", "arithmetic", "lookup_compute"}
    assert set(info["expected_tools"]) <= {"search", "python"} and info["expected_tools"]


def test_arguments_are_validated() -> None:
    for tools in (["calculator", "abacus"], [], ["python", "python"]):
        with pytest.raises(ValueError, match="tools must be distinct names"):
            ToolUseEnv(tools=tools)
    with pytest.raises(ValueError, match="no task kind can be solved"):
        ToolUseEnv(tools=["calculator"], kinds=["lookup"])
    with pytest.raises(ValueError, match="max_calls_per_reply"):
        ToolUseEnv(max_calls_per_reply=0)


def test_custom_documents_and_backends() -> None:
    documents = [
        {
            "id": "zorb",
            "title": "Zorb",
            "text": "The zorb is a blue fruit from Quell.",
            "questions": [{"question": "What colour is the zorb?", "answer": "blue"}],
        }
    ]
    env = _env(tools=["search"], documents=documents)
    observation, _ = env.reset(seed=0)
    assert observation == "What colour is the zorb?"
    reply = env.step(format_tool_call("search", {"query": "zorb colour"}))[0]
    assert "[zorb] Zorb" in reply

    class Backend:
        def search(self, query: str, k: int) -> list[Document]:
            return [Document("x", "X", "from the backend", 2.0)]

    with pytest.raises(ValueError, match="no task kind"):
        ToolUseEnv(tools=["search"], search_backend=Backend())  # nothing to ask without documents
    env = _env(tools=["search", "calculator"], search_backend=Backend())
    env.reset(seed=0)
    assert env.task is not None and env.task.kind == "arithmetic"
    assert "from the backend" in env.step(format_tool_call("search", {"query": "anything"}))[0]


def test_hostile_calls_through_the_env_get_errors_not_exceptions() -> None:
    env = _env(tools=["files", "calculator", "python"], kinds=["data"], max_turns=20)
    env.reset(seed=0)
    hostile = [
        format_tool_call("files", {"operation": "read", "path": "../../../../etc/passwd"}),
        format_tool_call("files", {"operation": "read", "path": "/etc/passwd"}),
        format_tool_call("files", {"operation": "write", "path": "a\u0000b", "content": "x"}),
        _calc("9**9**9**9"),
        _calc("__import__('os').system('id')"),
        format_tool_call("python", {"code": "import os\nos.getcwd()"}),
    ]
    for reply in hostile:
        observation, *_ = env.step(reply)
        (response,) = parse_tool_responses(observation)
        if response["name"] == "python":
            assert "content" in response and env.workspace.root not in response["content"]
        else:
            assert "error" in response, response
    rng = random.Random(0)
    fragments = [
        "<tool_call>",
        "</tool_call>",
        '{"name": "files"',
        ', "arguments": {',
        '"path": "..", ',
        "}",
        "]",
        '"x"',
    ]
    for _ in range(200):
        env.reset(seed=rng.randrange(100))
        reply = "".join(rng.choice(fragments) for _ in range(rng.randrange(1, 12)))
        observation, reward, *_ = env.step(reply)
        assert isinstance(observation, str) and env.observation_space.contains(observation)
        assert isinstance(reward, float)
    env.close()


def _trace(seed: int) -> list[Any]:
    env = _env(max_turns=6)
    trace: list[Any] = [env.reset(seed=seed)]
    replies = [
        format_tool_call("python", {"code": "import random\nrandom.seed(1)\nx = random.random()\nx"}),
        format_tool_call("python", {"code": "x * 2"})
        + format_tool_call("files", {"operation": "write", "path": "out/r.txt", "content": "hi"}),
        format_tool_call("files", {"operation": "list", "path": "."}) + _calc("2^64") + "<tool_call>{bad",
        format_tool_call("search", {"query": "lighthouse engineer", "k": 2}),
        "<answer>42</answer>",
    ]
    for reply in replies:
        trace.append(env.step(reply))
    env.close()
    return trace


def test_episodes_with_tool_calls_are_deterministic() -> None:
    first = _trace(11)
    assert first == _trace(11)
    assert first[1][0].startswith('<tool_response>{"name": "python", "content": "0.13436424411240122"}')
    assert "out/" in first[3][0] and '"content": "18446744073709551616"' in first[3][0]
    assert _trace(12)[0] != first[0]


def test_check_env_passes() -> None:
    for kwargs in ({}, {"tools": ["files"]}, {"tools": ["python"], "max_turns": 2}):
        env = gymnasium.make("mrlm/ToolUse-v0", **kwargs)
        check_env(env.unwrapped, skip_render_check=False)
        env.close()


def test_workspaces_are_fresh_per_episode_and_removed() -> None:
    env = _env(kinds=["data"])
    env.reset(seed=0)
    first = env.workspace.root
    assert first is not None and os.listdir(first)
    env.step(format_tool_call("files", {"operation": "write", "path": "mine.txt", "content": "x"}))
    env.reset(seed=1)
    second = env.workspace.root
    assert not os.path.exists(first) and second is not None and "mine.txt" not in os.listdir(second)
    env.close()
    assert not os.path.exists(second)
    env.close()  # closing twice is allowed
    env.reset(seed=2)  # and a closed env can start again
    third = env.workspace.root
    assert third is not None
    del env
    gc.collect()
    assert not os.path.exists(third)


def test_an_env_pickles_mid_episode_with_its_own_workspace_and_session() -> None:
    env = mrlm.envs.make("mrlm/ToolUse-v0", kinds=["data"], python_limits=FAST).unwrapped
    env.reset(seed=4)
    env.step(format_tool_call("python", {"code": "y = 21"}))
    env.step(format_tool_call("files", {"operation": "write", "path": "keep.txt", "content": "kept"}))
    clone = pickle.loads(pickle.dumps(env))
    assert clone.workspace.root != env.workspace.root
    reply = format_tool_call("python", {"code": "y * 2"}) + format_tool_call(
        "files", {"operation": "read", "path": "keep.txt"}
    )
    assert clone.step(reply) == env.step(reply)
    assert '"content": "42"' in env.step(reply)[0]
    clone.close()
    env.close()
