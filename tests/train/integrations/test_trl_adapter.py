"""TRL's GRPOTrainer on MRLM envs through ``mrlm.train.integrations.trl``: datasets of env seeds, the env
as a reward function (single turn) and as an ``environment_factory`` (tool-style, multi-turn), locally
and over gRPC, each reward equal to the env's own for the same seed and reply."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import mrlm.envs
from mrlm.envs.math.env import CORRECT, FINAL_WRONG, RETRY
from mrlm.train.integrations.trl import (
    EPISODE_OVER,
    EnvTool,
    env_dataset,
    env_factory,
    env_reward,
    env_rows,
)

MATH = "mrlm/Math-v0"

#: Tasks whose answer is known: seed ``d`` serves the record whose answer is ``d``.
RECORDS = [{"question": f"Reply with the digit {d}.", "answer": f"#### {d}"} for d in range(10)]

#: A format reward makes a boxed wrong answer (0.1) differ from an unboxed one (0.0).
KWARGS: dict[str, Any] = {"records": RECORDS, "format_reward": 0.1}


def _env_step_reward(seed: int, text: str, **kwargs: Any) -> float:
    """The env's own reward for one reply to the task of ``seed``."""
    env = mrlm.envs.make(MATH, **{**KWARGS, **kwargs})
    env.reset(seed=seed)
    reward = env.step(text)[1]
    env.close()
    return float(reward)


def _reply(content: str) -> list[dict[str, str]]:
    """A conversational completion, as TRL hands it to reward functions."""
    return [{"role": "assistant", "content": content}]


# The dataset builder ---------------------------------------------------------------------------------


def test_env_dataset_holds_the_envs_opening_conversation_for_each_seed() -> None:
    from datasets import Dataset  # type: ignore[import-untyped]

    dataset = env_dataset(MATH, [3, 0, 7], KWARGS)
    assert isinstance(dataset, Dataset)
    assert dataset.column_names == ["prompt", "seed", "environment"]
    env = mrlm.envs.make(MATH, **KWARGS)
    for row, seed in zip(dataset, [3, 0, 7], strict=True):
        observation, info = env.reset(seed=seed)
        assert row == {
            "prompt": [
                {"role": "system", "content": info["system_prompt"]},
                {"role": "user", "content": observation},
            ],
            "seed": seed,
            "environment": MATH,
        }
    assert dataset[0]["prompt"][1]["content"] == "Reply with the digit 3."


def test_env_rows_take_a_count_a_name_and_a_system_prompt() -> None:
    rows = env_rows(MATH, 2, KWARGS, name="digits", system_prompt=lambda agent, info: None)
    assert rows == [
        {
            "prompt": [{"role": "user", "content": f"Reply with the digit {d}."}],
            "seed": d,
            "environment": "digits",
        }
        for d in (0, 1)
    ]
    with pytest.raises(TypeError, match="seed must be an integer"):
        env_rows(MATH, [1.5], KWARGS)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"not 'gymnasium'"):  # a multi-agent env
        env_rows("mrlm/Debate-v0", 1)


# The reward function (single turn) -------------------------------------------------------------------


def test_reward_is_the_envs_own_on_right_and_wrong_answers() -> None:
    rows = env_rows(MATH, [4, 4, 4, 9, 9], KWARGS)
    completions: list[Any] = [
        _reply("\\boxed{4}"),  # right, boxed: 1.0 + 0.1
        _reply("\\boxed{5}"),  # wrong, boxed: 0.1
        "I think it is 4",  # right as a plain-text completion, unboxed: 1.0
        _reply("The answer is \\boxed{9}."),
        _reply("no idea"),  # no number at all: 0.0
    ]
    reward = env_reward(MATH, KWARGS)
    rewards = reward(
        prompts=[row["prompt"] for row in rows],
        completions=completions,
        seed=[row["seed"] for row in rows],
        environment=[row["environment"] for row in rows],
        trainer_state=None,  # TRL passes these too; they are ignored
        completion_ids=[[0]] * len(rows),
    )
    assert rewards == pytest.approx([1.1, 0.1, 1.0, 1.1, 0.0])
    texts = ["\\boxed{4}", "\\boxed{5}", "I think it is 4", "The answer is \\boxed{9}.", "no idea"]
    assert rewards == [_env_step_reward(row["seed"], text) for row, text in zip(rows, texts, strict=True)]
    assert reward.__name__ == MATH  # TRL logs rewards/<name>/mean
    reward.close()


def test_a_mixture_scores_each_row_with_its_own_envs_reward() -> None:
    easy = env_rows(MATH, [2], KWARGS, name="easy")
    strict = {**KWARGS, "correct_reward": 5.0}
    hard = env_rows(MATH, [2], strict, name="hard")
    rows = easy + hard
    columns: dict[str, Any] = {"seed": [2, 2], "environment": ["easy", "hard"]}
    prompts, completions = [row["prompt"] for row in rows], [_reply("\\boxed{2}")] * 2
    assert env_reward(MATH, KWARGS, name="easy")(prompts, completions, **columns) == [
        pytest.approx(1.1),
        None,
    ]
    assert env_reward(MATH, strict, name="hard")(prompts, completions, **columns) == [
        None,
        pytest.approx(5.1),
    ]


def test_reward_refuses_rows_without_seeds_or_from_another_env() -> None:
    rows = env_rows(MATH, [1], KWARGS)
    reward = env_reward(MATH, KWARGS)
    with pytest.raises(ValueError, match="no 'seed' column"):
        reward([rows[0]["prompt"]], [_reply("1")])
    with pytest.raises(ValueError, match="does not hold the env's observation"):
        reward([rows[0]["prompt"]], [_reply("1")], seed=[2])  # the prompt is seed 1's task
    unchecked = env_reward(MATH, KWARGS, check_prompts=False)
    assert unchecked([rows[0]["prompt"]], [_reply("\\boxed{2}")], seed=[2]) == [pytest.approx(1.1)]
    with pytest.raises(ValueError, match="workers"):
        env_reward(MATH, workers=0)


@pytest.mark.parametrize("build", [env_rows, env_dataset, env_reward, env_factory])
@pytest.mark.parametrize("env_kwargs", [[1], [("level", 1)], "level=1"])
def test_env_kwargs_that_are_not_a_mapping_are_a_type_error_naming_them(build: Any, env_kwargs: Any) -> None:
    """They ended in dict()'s 'cannot convert dictionary update sequence element #0'."""
    args = (MATH, 1, env_kwargs) if build in (env_rows, env_dataset) else (MATH, env_kwargs)
    with pytest.raises(TypeError, match=r"^env_kwargs must be a mapping .*, got (list|str): "):
        build(*args)


def test_reward_pools_envs_and_is_thread_safe() -> None:
    """Several threads calling one reward function at once get the serial results, and envs are
    built only as concurrency requires (never more than workers x callers)."""
    built: list[Any] = []
    lock = threading.Lock()

    def make_math() -> Any:
        env = mrlm.envs.make(MATH, **KWARGS)
        with lock:
            built.append(env)
        return env

    seeds = [seed % 10 for seed in range(24)]
    prompts = [row["prompt"] for row in env_rows(MATH, seeds, KWARGS)]
    completions = [_reply(f"\\boxed{{{(seed * 7) % 10}}}") for seed in seeds]
    expected = [1.1 if (seed * 7) % 10 == seed else 0.1 for seed in seeds]
    reward = env_reward(make_math, workers=3)
    assert reward.__name__ == "make_math"
    results: list[Any] = [None] * 4

    def call(index: int) -> None:
        results[index] = reward(prompts, completions, seed=seeds)

    threads = [threading.Thread(target=call, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == pytest.approx(expected) for result in results)
    assert len(built) <= 3 * 4
    count = len(built)
    assert reward(prompts, completions, seed=seeds) == pytest.approx(expected)
    assert len(built) == count  # the pooled envs are reused
    reward.close()


# The environment factory (tool style, multi-turn) ----------------------------------------------------


def _tools_trl_sees(instance: Any) -> list[str]:
    """The tool names TRL's GRPOTrainer exposes for an environment instance (its rule: the public
    functions of the class, but reset and get_reward)."""
    return [
        name
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def test_env_tool_plays_an_episode_through_its_submit_tool() -> None:
    from transformers.utils import get_json_schema

    factory = env_factory(MATH, {**KWARGS, "max_turns": 2})
    tool = factory()
    assert isinstance(tool, EnvTool)
    assert _tools_trl_sees(tool) == ["submit"]
    schema = get_json_schema(tool.submit)
    assert schema["function"]["name"] == "submit"
    assert list(schema["function"]["parameters"]["properties"]) == ["text"]

    [row] = env_rows(MATH, [6], KWARGS)
    assert tool.reset(**row) is None  # the prompt already holds the task
    assert tool.get_reward() == 0.0
    assert tool.submit("\\boxed{5}") == RETRY
    assert tool.submit("\\boxed{6}") == CORRECT
    # The episode's return: the format reward is paid once, with the first boxed reply.
    assert tool.get_reward() == pytest.approx(0.1 + 1.0)
    assert tool.submit("\\boxed{6}") == EPISODE_OVER  # the env is not stepped again
    assert tool.get_reward() == pytest.approx(1.1)

    # A new rollout starts from zero; a prompt without the task gets it from reset.
    assert tool.reset(seed=3, prompt=[{"role": "user", "content": ""}]) == "Reply with the digit 3."
    assert tool.get_reward() == 0.0
    assert tool.submit("\\boxed{1}") == RETRY
    assert tool.submit("\\boxed{2}") == FINAL_WRONG
    assert tool.get_reward() == pytest.approx(0.1)  # two boxed replies, one format reward
    with pytest.raises(ValueError, match="no 'seed' column"):
        tool.reset(prompt=row["prompt"])
    with pytest.raises(ValueError, match="does not hold the env's observation"):
        tool.reset(seed=7, prompt=row["prompt"])


# Remote envs -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_math() -> Iterator[str]:
    """``grpc://host:port/mrlm/Math-v0`` on a server running in this process."""
    from mrlm.envs.server import serve

    with serve(envs=(MATH,), host="127.0.0.1", port=0) as server:
        yield f"grpc://{server.address}/{MATH}"


def test_a_served_env_works_as_the_local_one(served_math: str) -> None:
    seeds = [4, 1, 8]
    rows = env_rows(served_math, seeds, KWARGS)
    assert rows == env_rows(MATH, seeds, KWARGS)  # named after the env, not the server
    completions = [_reply("\\boxed{4}"), _reply("\\boxed{4}"), _reply("eight")]
    columns = {"seed": seeds, "environment": [row["environment"] for row in rows]}
    prompts = [row["prompt"] for row in rows]
    remote = env_reward(served_math, KWARGS)
    assert remote(prompts, completions, **columns) == env_reward(MATH, KWARGS)(
        prompts, completions, **columns
    )
    remote.close()

    tool = env_factory(served_math, KWARGS)()
    assert tool.reset(**rows[1]) is None
    assert tool.submit("\\boxed{1}") == CORRECT
    assert tool.get_reward() == pytest.approx(1.1)


# TRL's GRPOTrainer -----------------------------------------------------------------------------------


def _steer(tokenizer: Any, replies: list[str]) -> list[list[Any]]:
    """``sequence_bias`` for generation that makes any model write one of ``replies``: each prefix of
    a reply's tokens is biased by 100 per token, so the longest matching prefix always wins, and where
    replies part the model's own sampling picks between them. (The tiny random model would otherwise
    never write a boxed answer or a tool call; the rest of the run is TRL's as usual.)"""
    bias: dict[tuple[int, ...], float] = {}
    for reply in replies:
        ids = tokenizer.encode(reply)
        for end in range(1, len(ids) + 1):
            bias[tuple(ids[:end])] = 100.0 * end
    return [[list(prefix), value] for prefix, value in bias.items()]


def _grpo_config(tmp_path: Any, replies: list[str], tokenizer: Any, **extra: Any) -> Any:
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        num_generations=4,
        max_steps=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        seed=0,
        generation_kwargs={"sequence_bias": _steer(tokenizer, replies)},
        **extra,
    )


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental


@pytest.mark.slow
def test_grpo_trainer_logs_the_envs_rewards_with_the_reward_function(tmp_path: Any) -> None:
    from trl import GRPOTrainer

    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    reward = env_reward(MATH, KWARGS)
    scored: list[tuple[list[int], list[str], list[float]]] = []

    def digits(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        rewards = reward(prompts, completions, **columns)
        texts = [completion[-1]["content"] for completion in completions]
        scored.append((list(columns["seed"]), texts, [float(r) for r in rewards if r is not None]))
        return rewards

    trainer = GRPOTrainer(
        model=build_tiny_model(tokenizer),
        reward_funcs=[digits],
        args=_grpo_config(tmp_path, ["\\boxed{0}<|im_end|>", "\\boxed{1}<|im_end|>"], tokenizer),
        train_dataset=env_dataset(MATH, 2, KWARGS),
        processing_class=tokenizer,
    )
    trainer.train()

    logs = [row for row in trainer.state.log_history if "rewards/digits/mean" in row]
    assert len(logs) == len(scored) == 2
    for log, (seeds, texts, rewards) in zip(logs, scored, strict=True):
        assert sorted(seeds) == [0, 0, 0, 0, 1, 1, 1, 1]  # each task sampled num_generations times
        assert set(texts) <= {"\\boxed{0}", "\\boxed{1}"}
        assert rewards == [_env_step_reward(s, t) for s, t in zip(seeds, texts, strict=True)]
        assert log["rewards/digits/mean"] == pytest.approx(sum(rewards) / len(rewards))
        assert math.isfinite(log["loss"])
    assert {1.1, 0.1} <= {r for _, _, rewards in scored for r in rewards}


def _replayed_return(seed: int, completion: list[dict[str, Any]]) -> float:
    """Replay the tool calls TRL executed (those answered by a tool message) on a fresh local env,
    checking each tool message is the env's observation; returns the episode's return."""
    env = mrlm.envs.make(MATH, **KWARGS)
    env.reset(seed=seed)
    total, over = 0.0, False
    for message, answer in itertools.pairwise(completion):
        if message["role"] != "assistant" or answer["role"] != "tool":
            continue
        [call] = message["tool_calls"]
        assert call["function"]["name"] == "submit"
        if over:
            assert answer["content"] == EPISODE_OVER
            continue
        observation, reward, terminated, truncated, _ = env.step(call["function"]["arguments"]["text"])
        assert answer["content"] == observation
        total += float(reward)
        over = terminated or truncated
    env.close()
    return total


@pytest.mark.slow
def test_grpo_trainer_runs_the_envs_tool_on_a_served_env(tmp_path: Any, served_math: str) -> None:
    """environment_factory with a remote env: the model calls ``submit``, TRL runs it against the
    server, and the rewards TRL logs are the returns a local env gives for the same calls."""
    from trl import GRPOTrainer

    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    call = '<tool_call>{"name": "submit", "arguments": {"text": "\\\\boxed{%d}"}}</tool_call><|im_end|>'
    seen: list[tuple[list[int], list[Any], list[float]]] = []

    def observe(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        """Records each rollout and its env's return; adds nothing to the reward."""
        returns = [environment.get_reward() for environment in columns["environments"]]
        seen.append((list(columns["seed"]), completions, returns))
        return [0.0 for _ in completions]

    trainer = GRPOTrainer(
        # The prompt lists the tool's schema, so the model needs more than 512 positions.
        model=build_tiny_model(tokenizer, max_position_embeddings=1024),
        reward_funcs=[observe],
        args=_grpo_config(
            tmp_path,
            [call % 0, call % 1],
            tokenizer,
            max_completion_length=128,
            max_tool_calling_iterations=1,
        ),
        train_dataset=env_dataset(served_math, 2, KWARGS),
        processing_class=tokenizer,
        environment_factory=env_factory(served_math, KWARGS),
    )
    trainer.train()

    logs = [row for row in trainer.state.log_history if "rewards/EnvTool/mean" in row]
    assert len(logs) == len(seen) == 2
    for log, (seeds, completions, returns) in zip(logs, seen, strict=True):
        assert log["tools/call_frequency"] > 0
        assert returns == [_replayed_return(s, c) for s, c in zip(seeds, completions, strict=True)]
        assert log["rewards/EnvTool/mean"] == pytest.approx(sum(returns) / len(returns))
        assert math.isfinite(log["loss"])
    assert {1.1, 0.1} <= {r for _, _, returns in seen for r in returns}


# examples/trl_grpo_env.py ----------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "trl_grpo_env.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """The example, imported in-process (tests/test_examples.py runs it as a script)."""
    spec = importlib.util.spec_from_file_location("trl_grpo_env_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env-kwargs", "{level:1}"], "argument --env-kwargs: not JSON (Expecting property name"),
        (
            ["--env-kwargs", "[1]"],
            "argument --env-kwargs: must be a JSON object of the env's arguments, got a list",
        ),
        (["--tasks", "0"], "argument --tasks: must be at least 1, got 0"),
        (["--steps", "0"], "argument --steps: must be at least 1, got 0"),
        (["--steps", "-2"], "argument --steps: must be at least 1, got -2"),
        (["--generations", "1"], "argument --generations: must be at least 2, got 1"),
    ],
)
def test_example_refuses_bad_flags_in_one_line(
    example: ModuleType, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Tracebacks before (JSON, a list into dict(), an empty dataset); --steps 0 trained a step."""
    with pytest.raises(SystemExit) as exit_info:
        example.parse_args(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]  # after argparse's usage lines
    assert error.startswith(f"trl_grpo_env.py: error: {message}")


def test_example_reads_the_flags_it_accepts(example: ModuleType) -> None:
    args = example.parse_args(["--env-kwargs", '{"level": 2}', "--steps", "1", "--tasks", "4"])
    assert (args.env_kwargs, args.steps, args.tasks) == ({"level": 2}, 1, 4)
    assert example.parse_args([]).env_kwargs == {"level": 1, "format_reward": 0.1}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("mrlm/Debate-v0", "'mrlm/Debate-v0' is offered as aec, parallel, not 'gymnasium'"),
        ("mrlm/Nope-v0", "unknown env id 'mrlm/Nope-v0'"),
    ],
)
def test_example_refuses_an_env_trl_cannot_train_in_one_line(
    example: ModuleType, tmp_path: Path, env: str, message: str
) -> None:
    """A multi-agent env was a traceback from deep in the registry."""
    output = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        example.main(["--env", env, "--mode", "reward", "--output-dir", str(output)])
    error = str(exit_info.value.code)
    assert error.startswith(f"trl_grpo_env.py: error: --env {env}: ") and message in error
    assert "\n" not in error
    assert not output.exists()  # refused before anything was loaded or written


# Dependencies ----------------------------------------------------------------------------------------


@pytest.mark.slow  # a fresh interpreter importing torch and transformers
def test_the_adapter_needs_no_trl_until_trl_is_used() -> None:
    code = (
        "import sys\n"
        "import mrlm.train, mrlm.train.integrations.trl\n"
        "assert 'trl' not in sys.modules, 'trl was imported'\n"
        "assert 'datasets' not in sys.modules, 'datasets was imported'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
