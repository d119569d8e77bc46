"""``mrlm-train eval`` with a tiny model: the episodes file, the summary, the seeds, and its errors."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium
import pytest

from mrlm.train import quickstart
from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.onpolicy import run_task_seeds
from mrlm.train.cli import main
from mrlm.train.evaluation import EVAL_SEED_BASE
from mrlm.train.loop import RunConfig

RECORDS = json.dumps(
    {"records": [{"question": f"What is {a} + 1?", "answer": f"#### {a + 1}"} for a in range(9)]}
)
SMALL = ["--env-kwargs", RECORDS, "--max-new-tokens", "4", "--no-progress-bar"]


def _eval(model: Path | str, *flags: str) -> list[str]:
    return ["eval", "--model", str(model), *SMALL, *flags]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    error = capsys.readouterr().err
    assert error.startswith(prefix), error
    assert error.count("\n") == 1 and "Traceback" not in error
    return error


def test_sampled_eval_writes_episodes_and_a_summary_that_agree(
    saved_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval" / "math.jsonl"
    argv = _eval(saved_dir, "-n", "3", "--k", "4", "--temperature", "1.0", "-o", str(out))
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "seeds: 1000000000..1000000002 (3 tasks x 4 samples)" in printed
    header = next(line for line in printed.splitlines() if line.startswith("env "))
    assert header.split() == ["env", "tasks", "episodes", "reward", "success", "pass@1", "pass@2", "pass@4"]

    lines = _lines(out)
    assert len(lines) == 12
    assert [(line["seed"], line["sample"]) for line in lines[:5]] == [
        (10**9, 0), (10**9, 1), (10**9, 2), (10**9, 3), (10**9 + 1, 0),
    ]  # fmt: skip
    for line in lines:
        assert line["env_id"] == "mrlm/Math-v0" and line["agent"] is None
        assert line["success"] == (line["total_reward"] > 0)
        assert line["total_reward"] == sum(line["turn_rewards"])
        assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]

    summary = json.loads((tmp_path / "eval" / "math.summary.json").read_text())
    assert summary["seeds"] == "1000000000..1000000002" and summary["samples_per_task"] == 4
    overall = summary["overall"]
    assert (overall["tasks"], overall["episodes"]) == (3, 12)
    rewards = [line["total_reward"] for line in lines]
    assert overall["mean_reward"] == pytest.approx(sum(rewards) / 12, rel=1e-9, abs=1e-12)
    assert overall["pass@1"] == pytest.approx(overall["success_rate"], rel=1e-9, abs=1e-12)
    assert summary["per_env"]["mrlm/Math-v0"] == overall

    # The same flags play the same episodes.
    again = tmp_path / "again.jsonl"
    assert main([*argv[:-1], str(again)]) == 0
    assert [line["messages"] for line in _lines(again)] == [line["messages"] for line in lines]


def test_explicit_seeds_and_greedy_default(
    saved_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "e.jsonl"
    summary = tmp_path / "s.json"
    assert main(_eval(saved_dir, "--seeds", "7", "3", "5", "-o", str(out), "--summary", str(summary))) == 0
    assert "seeds: 7, 3, 5 (3 tasks x 1 sample)" in capsys.readouterr().out
    assert [line["seed"] for line in _lines(out)] == [7, 3, 5]
    data = json.loads(summary.read_text())
    assert data["temperature"] == 0.0 and data["seeds"] == "7, 3, 5" and "pass@2" not in data["overall"]


def test_default_seeds_are_disjoint_from_training_seeds() -> None:
    assert EVAL_SEED_BASE == quickstart.EVAL_SEED_BASE  # the quickstart's evaluation seeds
    # The last seed of a millionth task, on the highest process, of a run with run.seed 999.
    for world_size in (1, 8):
        config = GRPOConfig(run=RunConfig(seed=999))
        seeds = run_task_seeds(config, SimpleNamespace(rank=world_size - 1, world_size=world_size))  # type: ignore[arg-type]
        seeds.cursor = 1_000_000 // world_size - 1
        assert seeds.take(1)[0] < EVAL_SEED_BASE
    # And the first training seeds of the default run are far below.
    assert run_task_seeds(GRPOConfig(), SimpleNamespace(rank=0, world_size=1)).take(1) == [0]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny

    tokenizer = build_tiny_tokenizer()
    return save_tiny(tmp_path_factory.mktemp("other"), build_tiny_model(tokenizer, seed=1), tokenizer)


def test_multi_agent_eval_with_a_model_per_agent(
    saved_dir: Path, other_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "team.jsonl"
    argv = ["eval", "--model", str(saved_dir), "--agent-models", "second", str(other_model)]
    argv += [
        "--env-id",
        "mrlm/TeamSum-v0",
        "-n",
        "2",
        "--max-new-tokens",
        "4",
        "--no-progress-bar",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("mrlm/TeamSum")]
    assert [row[1] for row in rows] == ["team", "first", "second"]
    lines = _lines(out)
    assert [(line["seed"], line["agent"], line["policy"]) for line in lines] == [
        (10**9, "first", "policy"), (10**9, "second", "second"),
        (10**9 + 1, "first", "policy"), (10**9 + 1, "second", "second"),
    ]  # fmt: skip
    summary = json.loads((tmp_path / "team.summary.json").read_text())
    assert summary["agent_models"] == {"second": str(other_model)}
    assert set(summary["per_env"]["mrlm/TeamSum-v0"]["per_agent"]) == {"first", "second"}


def test_a_mixture_reports_each_env(saved_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixture = json.dumps(
        [
            {"id": "mrlm/Math-v0", "kwargs": {"level": 1}},
            {"id": "mrlm/Math-v0", "name": "mine", "kwargs": json.loads(RECORDS)},
        ]
    )
    argv = ["eval", "--model", str(saved_dir), "--env-mixture", mixture, "-n", "2", "--max-new-tokens", "2"]
    assert main([*argv, "--no-progress-bar"]) == 0
    printed = capsys.readouterr().out
    assert "(2 tasks x 1 sample, in each of 2 envs)" in printed
    assert [line.split()[:3] for line in printed.splitlines()[2:5]] == [
        ["mrlm/Math-v0", "2", "2"], ["mine", "2", "2"], ["all", "4", "4"],
    ]  # fmt: skip


def test_progress_line_on_stderr(saved_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--model", str(saved_dir), "--env-kwargs", RECORDS, "-n", "3", "--max-new-tokens", "2"]
    assert main([*argv, "--batch-size", "2"]) == 0
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("episodes")]
    assert [re.match(r"episodes (\d+)/3", line).group(1) for line in progress] == ["2", "3"]  # type: ignore[union-attr]


@pytest.fixture
def step_fails() -> Iterator[str]:
    gymnasium.register(
        "mrlm-test/EvalStepFails-v0", entry_point="tests.train.evaluation.test_play:_StepFails"
    )
    yield "mrlm-test/EvalStepFails-v0"
    gymnasium.registry.pop("mrlm-test/EvalStepFails-v0")


@pytest.mark.parametrize(
    ("flags", "prefix"),
    [
        (["--env-id", "mrlm/Nope-v0"], "mrlm-train eval: UnknownEnvError: unknown env id 'mrlm/Nope-v0'"),
        (
            ["--env-kwargs", '{"level": 9}'],
            "mrlm-train eval: EnvFailedError: env 'mrlm/Math-v0' could not be built: ValueError",
        ),
        (
            ["--env-kwargs", '{"bogus": 1}'],
            "mrlm-train eval: EnvArgumentError: 'mrlm/Math-v0' has no keyword argument 'bogus'",
        ),
        (
            ["--agent-models", "third", "tiny", "--env-id", "mrlm/TeamSum-v0"],
            "mrlm-train eval: MultiAgentSetupError: agent_models names agents ['third']",
        ),
        (["--device", "bogus"], "mrlm-train eval: DeviceError: device 'bogus' is not a torch device"),
        (["--device", "cuda:99"], "mrlm-train eval: DeviceError: device 'cuda:99': this machine has"),
    ],
    ids=["unknown-env", "env-raises", "bad-kwarg", "unknown-agent", "unknown-device", "absent-device"],
)
def test_a_broken_env_exits_with_one_line(
    capsys: pytest.CaptureFixture[str], flags: list[str], prefix: str
) -> None:
    assert main(["eval", "--model", "tiny", "-n", "1", "--no-progress-bar", *flags]) == 1
    _one_line(capsys, prefix)


def test_an_env_raising_in_an_episode_exits_with_one_line(
    step_fails: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny",
                "--env-id",
                step_fails,
                "-n",
                "2",
                "--max-new-tokens",
                "2",
                "--no-progress-bar",
            ]
        )
        == 1
    )
    _one_line(
        capsys,
        f"mrlm-train eval: EnvFailedError: env '{step_fails}' raised during the episodes of seeds "
        "1000000000..1000000001: ZeroDivisionError: the env divided by zero",
    )


def test_a_model_path_without_a_model_exits_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_eval(tmp_path / "missing", "-n", "1")) == 1
    _one_line(capsys, "mrlm-train eval: FileNotFoundError: model path ")
    (tmp_path / "empty").mkdir()
    assert main(_eval(tmp_path / "empty", "-n", "1")) == 1
    _one_line(capsys, "mrlm-train eval: ModelNotFoundError: model directory ")


def _broken_copy(saved_dir: Path, into: Path, broken: str) -> Path:
    """A copy of ``saved_dir`` with one part broken: config.json not JSON, the weights gone, or
    the chat template gone."""
    model = Path(shutil.copytree(saved_dir, into / broken))
    if broken == "config-not-json":
        (model / "config.json").write_text("not json")
    elif broken == "weights-cut-short":  # an interrupted copy or save
        weights = model / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
    elif broken == "no-tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (model / name).unlink()
    else:
        (model / ("model.safetensors" if broken == "no-weights" else "chat_template.jinja")).unlink()
    return model


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("config-not-json", "holds no model that loads: OSError: It looks like the config file at"),
        ("no-weights", "holds no model that loads: OSError: Error no file named model.safetensors"),
        ("weights-cut-short", "holds no model that loads: SafetensorError: "),
        # transformers would build an empty tokenizer from config.json alone, and the first
        # prompt would fail to encode.
        ("no-tokenizer", "has no tokenizer (tokenizer.json, tokenizer_config.json, "),
    ],
)
def test_a_model_directory_whose_model_does_not_load_exits_with_one_line(
    saved_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str, message: str
) -> None:
    model = _broken_copy(saved_dir, tmp_path, broken)
    assert main(_eval(model, "-n", "1")) == 1
    assert message in _one_line(
        capsys, f"mrlm-train eval: ModelNotFoundError: model directory {str(model)!r} "
    )


def test_a_model_without_a_chat_template_exits_with_one_line(
    saved_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _broken_copy(saved_dir, tmp_path, "no-chat-template")
    assert main(_eval(model, "-n", "1")) == 1
    error = _one_line(capsys, f"mrlm-train eval: NoChatTemplateError: the tokenizer of model {str(model)!r} ")
    assert "has no chat template" in error and "chat_template.jinja" in error


@pytest.mark.parametrize(
    "flags",
    [
        ["--k", "2"],
        ["--k", "2", "--temperature", "1", "--pass-at", "3"],
        ["-n", "0"],
        ["--seeds", "1", "1"],
        ["--success-threshold", "nan"],
        ["--agent-models", "first", ""],
        [],
    ],
    ids=[
        "greedy-k",
        "pass-at-beyond-k",
        "no-tasks",
        "repeated-seed",
        "nan-threshold",
        "empty-agent-model",
        "no-model",
    ],
)
def test_bad_settings_are_usage_errors(flags: list[str]) -> None:
    model = [] if not flags else ["--model", "tiny"]
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", *model, *flags])
    assert exit_info.value.code == 2


def test_help_documents_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    for flag in ("--model", "--agent-models", "--k", "--success-threshold", "--seed-start", "-n", "-o"):
        assert flag in text
