"""Mistakes in a run's inputs end ``mrlm-train`` with one line naming the cause, status 1, no traceback."""

from __future__ import annotations

import json
import os
import pickle
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest

from mrlm.train.cli import main
from tests.train.one_turn_env import OneTurnEnv

# The smallest GRPO run: one task, two replies of two tokens.
SMALL = ["--group-size", "2", "--prompts-per-step", "1", "--micro-batch-size", "2", "--max-new-tokens", "2"]


def _grpo(output_dir: Path, *flags: str) -> list[str]:
    return ["grpo", *SMALL, "--run.output-dir", str(output_dir), "--run.no-progress-bar", *flags]


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    error = capsys.readouterr().err
    assert error.startswith(prefix), error
    assert error.count("\n") == 1 and "Traceback" not in error
    return error


# ---------------------------------------------------------------------------------- the model path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("not a model"), "is a file; give the directory save_pretrained wrote"),
        (lambda p: p.mkdir(), "is empty; give the directory save_pretrained wrote"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("")), "has no config.json"),
    ],
    ids=["file", "empty-directory", "no-config"],
)
def test_a_model_path_that_is_no_model_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], Any], message: str
) -> None:
    model = tmp_path / "model"
    make(model)
    assert main(_grpo(tmp_path / "run", "--model.name-or-path", str(model))) == 1
    error = _one_line(capsys, "mrlm-train grpo: ModelNotFoundError: model ")
    assert repr(str(model)) in error and message in error


@pytest.mark.parametrize("command", ["grpo", "ppo", "online-dpo", "magrpo"])
def test_a_model_without_a_chat_template_fails_before_its_weights_load(
    saved_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    # Episodes are rendered with the template: without one the first rollout failed, once loaded.
    monkeypatch.setattr("mrlm.train.policy._from_pretrained_model", _no_loading)
    model = Path(shutil.copytree(saved_dir, tmp_path / "model"))
    (model / "chat_template.jinja").unlink()
    argv = [command, "--model.name-or-path", str(model), "--run.output-dir", str(tmp_path / "run")]
    assert main([*argv, "--dist.cpu"]) == 1
    error = _one_line(capsys, f"mrlm-train {command}: NoChatTemplateError: the tokenizer of model ")
    assert repr(str(model)) in error


# ---------------------------------------------------------------------------------- the output directory


@pytest.mark.parametrize("below", [False, True], ids=["is-a-file", "under-a-file"])
def test_an_output_dir_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], below: bool
) -> None:
    file = tmp_path / "taken"
    file.write_text("")
    output_dir = file / "run" if below else file
    assert main(_grpo(output_dir)) == 1
    error = _one_line(capsys, f"mrlm-train grpo: OutputDirError: run.output_dir {str(output_dir)!r} ")
    assert f"{str(file)!r} is a file, not a directory" in error


def _no_loading(*args: object) -> None:
    raise AssertionError("the model was loaded")


def test_an_output_dir_that_is_a_file_fails_before_the_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("mrlm.train.algorithms.grpo.load_policy", _no_loading)
    monkeypatch.setattr("mrlm.train.algorithms.sft.load_policy", _no_loading)
    (tmp_path / "taken").write_text("")
    assert main(_grpo(tmp_path / "taken")) == 1
    assert main(["sft", "--data", "x.jsonl", "--run.output-dir", str(tmp_path / "taken")]) == 1
    assert capsys.readouterr().err.count("OutputDirError") == 2


@pytest.mark.parametrize("command", ["sft", "dpo"])
@pytest.mark.parametrize("where", ["missing", "a-directory"])
def test_a_data_path_that_names_no_file_fails_before_the_model_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    where: str,
) -> None:
    monkeypatch.setattr(f"mrlm.train.algorithms.{command}.load_policy", _no_loading)
    data, message = {
        "missing": (tmp_path / "absent.jsonl", "absent.jsonl: no such file"),
        "a-directory": (tmp_path, "is a directory, not a JSONL file of records"),
    }[where]
    argv = [command, "--data", str(data), "--run.output-dir", str(tmp_path / "run")]
    assert main(argv) == 1
    error_type = "SFTDataError" if command == "sft" else "PreferenceDataError"
    assert message in _one_line(capsys, f"mrlm-train {command}: {error_type}: ")


@pytest.mark.parametrize("command", ["grpo", "eval"])
def test_an_env_server_that_cannot_be_reached_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Nothing listens on port 1: the client's ServerUnavailableError says so, without a traceback."""
    argv = [command, "--env-id", "grpc://127.0.0.1:1/mrlm/Math-v0"]
    if command == "grpo":
        argv += ["--model.name-or-path", "tiny", "--run.output-dir", str(tmp_path / "run")]
    else:
        argv += ["--model", "tiny", "-n", "1"]
    assert main(argv) == 1
    error = _one_line(capsys, f"mrlm-train {command}: ")
    assert "ServerUnavailableError: ListEnvs on grpc://127.0.0.1:1" in error and "mrlm-envs serve" in error


# ---------------------------------------------------------------------------------- output files


def _no_play(*args: object) -> None:
    raise AssertionError("the episodes were played")


@pytest.mark.parametrize("command", ["eval", "collect"])
@pytest.mark.parametrize(
    "where",
    [
        "a-directory",
        "under-a-file",
        "uncreatable",
        "refusing-new-files",
        "a-link-into-a-missing-directory",
        "a-link-loop",
        "under-a-link-to-a-missing-directory",
    ],
)
def test_an_output_file_that_cannot_be_written_fails_before_playing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    where: str,
) -> None:
    monkeypatch.setattr(f"mrlm.train.commands.{command}.play", _no_play)
    (tmp_path / "taken").write_text("")
    (tmp_path / "folder").mkdir()
    # Dangling links passed this check, then writing through them failed after every episode was played.
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "missing" / "e.jsonl")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    (tmp_path / "dir-link").symlink_to(tmp_path / "missing")
    output, message = {
        "a-directory": (tmp_path / "folder", "is a directory, not a file"),
        "under-a-file": (tmp_path / "taken" / "e.jsonl", "is a file, not a directory"),
        "uncreatable": (Path("/proc/mrlm-no-such-dir/e.jsonl"), "cannot be created"),
        # /proc takes no new file, though root passes its permission bits (others fail on them)
        "refusing-new-files": (
            Path("/proc/mrlm-e.jsonl"),
            "refuses new files" if os.geteuid() == 0 else "is not writable",
        ),
        "a-link-into-a-missing-directory": (
            tmp_path / "link.jsonl",
            f"{str(tmp_path / 'link.jsonl')!r} is a symbolic link to {str(tmp_path / 'missing' / 'e.jsonl')!r}, "
            f"whose directory {str(tmp_path / 'missing')!r} does not exist",
        ),
        "a-link-loop": (tmp_path / "loop-a", f"{str(tmp_path / 'loop-a')!r} is a loop of symbolic links"),
        "under-a-link-to-a-missing-directory": (
            tmp_path / "dir-link" / "e.jsonl",
            f"{str(tmp_path / 'dir-link')!r} is a symbolic link to {str(tmp_path / 'missing')!r}, "
            "which does not exist",
        ),
    }[where]
    argv = [command, "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "-o", str(output)]
    assert main(argv) == 1
    error = _one_line(capsys, f"mrlm-train {command}: OutputDirError: ")
    assert message in error and "output" in error


def test_an_eval_summary_that_cannot_be_written_fails_before_playing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("mrlm.train.commands.eval.play", _no_play)
    (tmp_path / "taken").write_text("")
    summary = tmp_path / "taken" / "summary.json"
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "--summary", str(summary)]
    assert main(argv) == 1
    error = _one_line(capsys, "mrlm-train eval: OutputDirError: the directory of summary ")
    assert "is a file, not a directory" in error


def test_an_eval_summary_on_a_dangling_link_fails_before_playing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("mrlm.train.commands.eval.play", _no_play)
    summary = tmp_path / "summary.json"
    summary.symlink_to(tmp_path / "gone" / "summary.json")
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "--summary", str(summary)]
    assert main(argv) == 1
    error = _one_line(capsys, f"mrlm-train eval: OutputDirError: summary {str(summary)!r} is a symbolic link")
    assert f"whose directory {str(tmp_path / 'gone')!r} does not exist" in error
    assert not (tmp_path / "gone").exists()  # no directory is made where a stale link points


def test_a_dangling_link_into_an_existing_directory_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "there").mkdir()
    output = tmp_path / "episodes.jsonl"
    output.symlink_to(tmp_path / "there" / "episodes.jsonl")
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "-o", str(output)]
    assert main([*argv, "--summary", str(tmp_path / "summary.json")]) == 0
    assert output.is_symlink()
    assert len((tmp_path / "there" / "episodes.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("name", ["same-path", "dot-dot", "symlink", "hard-link"])
def test_an_eval_summary_on_the_output_file_fails_before_playing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # Written after the episodes, the summary replaced them.
    monkeypatch.setattr("mrlm.train.commands.eval.play", _no_play)
    (tmp_path / "sub").mkdir()
    output = tmp_path / "episodes.json"
    summary = {
        "same-path": output,
        "dot-dot": tmp_path / "sub" / ".." / "episodes.json",
        "symlink": tmp_path / "link.json",
        "hard-link": tmp_path / "other-name.json",
    }[name]
    if name == "symlink":
        summary.symlink_to(output)
    elif name == "hard-link":
        output.write_text("")
        os.link(output, summary)
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "-o", str(output)]
    assert main([*argv, "--summary", str(summary)]) == 1
    error = _one_line(capsys, f"mrlm-train eval: OutputDirError: output {str(output)!r} and summary ")
    assert "are the same file" in error


def test_a_summary_beside_the_output_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("mrlm.train.commands.eval.play", _no_play)
    (tmp_path / "episodes.summary.json").mkdir()  # where the summary of -o episodes.jsonl would go
    output = tmp_path / "episodes.jsonl"
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "-o", str(output)]
    assert main(argv) == 1
    error = _one_line(capsys, "mrlm-train eval: OutputDirError: summary (written beside output) ")
    assert "episodes.summary.json' is a directory, not a file" in error


def test_an_output_file_in_new_directories_is_written(tmp_path: Path) -> None:
    output = tmp_path / "new" / "deeper" / "episodes.jsonl"
    argv = ["eval", "--model", "tiny", "--env-id", "mrlm/Math-v0", "-n", "2", "-o", str(output)]
    assert main(argv) == 0
    assert len(output.read_text().splitlines()) == 2
    assert output.with_suffix(".summary.json").is_file()


# ---------------------------------------------------------------------------------- settings


def test_max_new_tokens_too_large_to_allocate_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _grpo(tmp_path / "run", "--env-kwargs", '{"level": 1}', "--max-new-tokens", str(10**12))
    assert main(argv) == 1
    error = _one_line(
        capsys, "mrlm-train grpo: GenerationMemoryError: max_new_tokens=1000000000000 is too large"
    )
    assert "lower max_new_tokens" in error


#: Sampling settings out of range, and the message that names each.
BAD_SAMPLING = [
    (["--max-new-tokens", "0"], "max_new_tokens must be at least 1, got 0"),
    (["--temperature", "-1"], "temperature must be >= 0 (0 = greedy), got -1.0"),
    (["--temperature", "nan"], "temperature must be >= 0 (0 = greedy), got nan"),
    (["--top-p", "0"], "top_p must be in (0, 1], got 0.0"),
]


@pytest.mark.parametrize("command", ["grpo", "ppo", "online-dpo", "magrpo", "ippo", "eval"])
@pytest.mark.parametrize(("flags", "message"), BAD_SAMPLING, ids=["tokens", "temperature", "nan", "top-p"])
def test_sampling_settings_out_of_range_are_refused_while_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, flags: list[str], message: str
) -> None:
    """Refused as the flags are read (tyro's message and status 2, before any command runs), not by
    a traceback once the model has loaded."""
    extra = ["--model", "tiny"] if command == "eval" else ["--run.output-dir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exit_:
        main([command, *extra, *flags])
    assert exit_.value.code == 2
    _assert_refused_by_flag(capsys.readouterr().err, command, message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # Each named alone: "prompts_per_step, micro_batch_size and num_iterations must be at least 1"
        # left the user to find which was wrong, and never said the value.
        (["grpo", "--prompts-per-step", "0"], "prompts_per_step must be at least 1, got 0"),
        (["grpo", "--micro-batch-size", "0"], "micro_batch_size must be at least 1, got 0"),
        (["grpo", "--num-iterations", "-2"], "num_iterations must be at least 1, got -2"),
        (["grpo", "--max-sampling-rounds", "0"], "max_sampling_rounds must be at least 1, got 0"),
        (["ppo", "--ppo-epochs", "0"], "ppo_epochs must be at least 1, got 0"),
        (["ppo", "--mini-batch-size", "0"], "mini_batch_size must be at least 1, got 0"),
        (["magrpo", "--micro-batch-size", "0"], "micro_batch_size must be at least 1, got 0"),
        (["ippo", "--num-iterations", "0"], "num_iterations must be at least 1, got 0"),
        (
            ["sft", "--data", "x.jsonl", "--micro-batch-size", "0"],
            "micro_batch_size must be at least 1, got 0",
        ),
        (["dpo", "--data", "x.jsonl", "--batch-size", "0"], "batch_size must be at least 1, got 0"),
        (["grpo", "--model.lora-alpha", "0"], "lora_alpha must be at least 1, got 0"),
        (["sft", "--data", "x.jsonl", "--epochs", "inf"], "epochs must be a finite number > 0"),
        (["sft", "--data", "x.jsonl", "--min-reward", "nan"], "min_reward must be finite"),
        (["magrpo", "--model.lora-dropout", "nan"], "lora_dropout must be in [0, 1), got nan"),
        (["grpo", "--model.lora-dropout", "1"], "lora_dropout must be in [0, 1), got 1.0"),
        (["grpo", "--max-turns", "0"], "max_turns must be at least 1, got 0"),
        (["ppo", "--max-turns", "0"], "max_turns must be at least 1, got 0"),
        (["online-dpo", "--max-turns", "0"], "max_turns must be at least 1, got 0"),
        (["magrpo", "--max-turns", "0"], "max_turns must be at least 1, got 0"),
        (["grpo", "--clip-high", "-0.5"], "clip_high must be >= 0, got -0.5"),
        (["magrpo", "--clip-low", "2"], "clip_low must be in [0, 1), got 2.0"),
        (["ippo", "--clip-low", "1"], "clip_low must be in [0, 1), got 1.0"),
        (["ppo", "--clip-range", "1.5"], "clip_range must be in (0, 1), got 1.5"),
        (["grpo", "--kl-coef", "nan"], "kl_coef must be a finite number >= 0, got nan"),
        (["magrpo", "--kl-coef", "inf"], "kl_coef must be a finite number >= 0, got inf"),
        (["marloo", "--kl-coef", "-1"], "kl_coef must be a finite number >= 0, got -1.0"),
        (["ppo", "--kl-coef", "inf"], "kl_coef must be a finite number >= 0, got inf"),
        (["ppo", "--reward-clip", "nan"], "reward_clip must be a finite number >= 0, got nan"),
        (["ppo", "--entropy-coef", "nan"], "entropy_coef must be a finite number >= 0, got nan"),
        (["ppo", "--target-kl", "nan"], "target_kl must be a finite number >= 0, got nan"),
        (["ppo", "--vf-coef", "nan"], "vf_coef must be a finite number >= 0, got nan"),
        (
            ["ppo", "--critic-learning-rate", "-1"],
            "critic_learning_rate must be a finite number >= 0, got -1.0",
        ),
        (["ppo", "--kl-horizon", "0"], "kl_horizon must be a finite number > 0, got 0.0"),
        (["ippo", "--value-clip-range", "nan"], "value_clip_range must be a finite number >= 0, got nan"),
        (
            ["ippo", "--critic-learning-rate", "nan"],
            "critic_learning_rate must be a finite number >= 0, got nan",
        ),
        (["grpo", "--run.seed", "-1"], "seed must be >= 0 (env resets take no negative seed), got -1"),
    ],
)
def test_settings_out_of_range_are_refused_while_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--run.output-dir", str(tmp_path / "run")])
    assert exit_.value.code == 2
    _assert_refused_by_flag(capsys.readouterr().err, argv[0], message)


def _assert_refused_by_flag(error: str, command: str, message: str) -> None:
    """tyro's refusal: no traceback, the setting's message, the group of a nested flag by its own
    name (``run``, not tyro's inner name for the union of commands), and the command's help."""
    text = " ".join(error.replace("\u2502", " ").split())
    assert "Traceback" not in text and "__tyro" not in text
    assert message in text
    assert f"mrlm-train {command} --help" in text


def test_a_sampling_setting_out_of_range_in_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("max_new_tokens: 0\n")
    assert main(["magrpo", "--config", str(config)]) == 1
    error = _one_line(capsys, f"mrlm-train magrpo: ConfigError: {config}")
    assert "max_new_tokens must be at least 1, got 0" in error


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("optim:\n  learning_rate: abc\n", ".optim.learning_rate: expected a number, got 'abc'"),
        ("group_size: four\n", ".group_size: expected an integer, got 'four'"),
        ("run:\n  max_steps: 2.5\n", ".run.max_steps: expected an integer, got 2.5"),
        ("dynamic_sampling: 1\n", ".dynamic_sampling: expected true or false, got 1"),
    ],
)
def test_a_yaml_value_of_the_wrong_type_names_the_field_and_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml: str, message: str
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(yaml)
    assert main(["grpo", "--config", str(config)]) == 1
    error = _one_line(capsys, f"mrlm-train grpo: ConfigError: {config}")
    assert message in error


# ---------------------------------------------------------------------------------- SFT data


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"a": 1}'], "record 0: unknown format; expected 'messages', 'prompt' and 'completion'"),
        (['{"prompt": "1+1=", "completion": "2"}', "not json"], ":2: not valid JSON"),
        (['{"prompt": "1+1="}'], "record 0 (prompt/completion): missing field 'completion'"),
    ],
    ids=["unknown-format", "bad-json-line", "missing-field"],
)
def test_sft_data_that_cannot_be_used_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], message: str
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(line + "\n" for line in lines))
    assert main(["sft", "--data", str(data), "--run.output-dir", str(tmp_path / "run")]) == 1
    error = _one_line(capsys, "mrlm-train sft: SFTDataError: ")
    assert message in error


@pytest.mark.parametrize(("command", "error_type"), [("sft", "SFTDataError"), ("dpo", "PreferenceDataError")])
def test_an_empty_data_file_is_named_as_empty_before_the_model_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    error_type: str,
) -> None:
    monkeypatch.setattr(f"mrlm.train.algorithms.{command}.load_policy", _no_loading)
    data = tmp_path / "empty.jsonl"
    data.write_text("\n")
    assert main([command, "--data", str(data), "--run.output-dir", str(tmp_path / "run")]) == 1
    error = _one_line(capsys, f"mrlm-train {command}: {error_type}: ")
    assert error.rstrip().endswith("empty.jsonl holds no records: nothing to train on")


def test_sft_data_with_no_trajectory_left_after_the_reward_filter_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trajectory = {"token_ids": [1, 2, 3], "mask": [0, 1, 1], "total_reward": 0.0}
    data = tmp_path / "trajectories.jsonl"
    data.write_text(json.dumps(trajectory) + "\n")
    argv = ["sft", "--data", str(data), "--min-reward", "1", "--run.output-dir", str(tmp_path / "run")]
    assert main(argv) == 1
    error = _one_line(capsys, "mrlm-train sft: SFTDataError: no example of ")
    assert "left to train on" in error


# ---------------------------------------------------------------------------------- rewards


class _NoneRewardEnv(OneTurnEnv):
    """Answers every reply with None for a reward, as a broken custom env might."""

    def reward(self, action: str) -> Any:
        return None


class _HugeRewardEnv(OneTurnEnv):
    def reward(self, action: str) -> float:
        return 1e39  # finite as a Python float, infinite as float32


@pytest.fixture
def registered() -> Iterator[Callable[[str, type], None]]:
    ids: list[str] = []

    def register(env_id: str, env: type) -> None:
        gymnasium.register(env_id, entry_point=f"{__name__}:{env.__name__}")
        ids.append(env_id)

    yield register
    for env_id in ids:
        gymnasium.registry.pop(env_id)


@pytest.mark.filterwarnings("ignore:.*reward returned by `step\\(\\)`")  # gymnasium's checker sees it too
def test_a_none_reward_names_the_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], registered: Callable[[str, type], None]
) -> None:
    registered("mrlm-test/NoneReward-v0", _NoneRewardEnv)
    assert main(_grpo(tmp_path, "--env-id", "mrlm-test/NoneReward-v0", "--env-kwargs", "{}")) == 1
    _one_line(
        capsys,
        "mrlm-train grpo: EnvOutputError: env 'mrlm-test/NoneReward-v0' returned the reward None "
        "(NoneType) from step(); rewards must be numbers (int or float)",
    )


def test_a_finite_reward_that_overflows_float32_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], registered: Callable[[str, type], None]
) -> None:
    registered("mrlm-test/HugeReward-v0", _HugeRewardEnv)
    assert main(_grpo(tmp_path, "--env-id", "mrlm-test/HugeReward-v0", "--env-kwargs", "{}")) == 1
    error = _one_line(
        capsys,
        "mrlm-train grpo: RewardOverflowError: env 'mrlm-test/HugeReward-v0' paid a total reward of 1e+39",
    )
    assert "overflows float32" in error and "non-finite" not in error


class _BrokenRewardEnv(OneTurnEnv):
    def reward(self, action: str) -> float:
        raise RuntimeError("the scoring service is down")


def test_an_env_that_raises_during_training_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], registered: Callable[[str, type], None]
) -> None:
    registered("mrlm-test/Broken-v0", _BrokenRewardEnv)
    assert main(_grpo(tmp_path, "--env-id", "mrlm-test/Broken-v0", "--env-kwargs", "{}")) == 1
    error = _one_line(
        capsys,
        "mrlm-train grpo: EnvFailedError: env 'mrlm-test/Broken-v0' raised during the episodes of seeds ",
    )
    assert error.rstrip().endswith("RuntimeError: the scoring service is down")


# ---------------------------------------------------------------------------------- checkpoints


class _Touch:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def test_resuming_a_tampered_checkpoint_runs_nothing_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    base = _grpo(run, "--env-kwargs", '{"level": 1}', "--run.max-steps", "1")
    assert main(base) == 0
    checkpoint = run / "checkpoints" / "step-000001"
    marker = tmp_path / "code-ran"
    (checkpoint / "state" / ".metadata").write_bytes(pickle.dumps(_Touch(marker)))
    capsys.readouterr()

    assert main([*base[:-2], "--run.max-steps", "2", "--run.resume", "latest"]) == 1
    _one_line(
        capsys,
        f"mrlm-train grpo: CheckpointError: checkpoint {checkpoint} failed verification: "
        "state/.metadata does not match manifest.json",
    )
    assert not marker.exists()


@pytest.mark.slow
def test_the_console_exits_with_status_1_and_one_line(tmp_path: Path) -> None:
    (tmp_path / "model").write_text("")
    argv = _grpo(tmp_path / "run", "--model.name-or-path", str(tmp_path / "model"))
    result = subprocess.run(
        [sys.executable, "-m", "mrlm.train.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("mrlm-train grpo: ModelNotFoundError: model path ")
    assert result.stderr.count("\n") == 1


def test_help_into_a_reader_that_is_gone_ends_quietly() -> None:
    # As with `mrlm-train grpo --help | head -1`: the read end is closed before the help is written.
    process = subprocess.Popen(
        [sys.executable, "-m", "mrlm.train.cli", "grpo", "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert "Traceback" not in error and "BrokenPipeError" not in error, error


@pytest.mark.parametrize("command", ["grpo", "ppo", "online-dpo"])
def test_an_env_no_one_answers_to_fails_before_the_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # Both were found only when the rollout built its first env, after the model (minutes for a real one).
    for module in ("grpo", "ppo", "online_dpo"):
        monkeypatch.setattr(f"mrlm.train.algorithms.{module}.load_policy", _no_loading)
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = ["--run.output-dir", str(tmp_path / "run"), "--dist.cpu"]
    assert main([command, "--env-id", "mrlm/Nope-v0", *run]) == 1
    assert "UnknownEnvError: unknown env id 'mrlm/Nope-v0'" in capsys.readouterr().err
    assert main([command, "--env-id", f"grpc://127.0.0.1:{port}/mrlm/Math-v0", *run]) == 1
    assert f"ServerUnavailableError: ListEnvs on grpc://127.0.0.1:{port} failed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "env", "message"),
    [
        (
            "grpo",
            ["--env-kwargs", '{"level": 9}'],
            "env 'mrlm/Math-v0' could not be built: ValueError: level",
        ),
        ("ppo", ["--env-kwargs", '{"level": 9}'], "env 'mrlm/Math-v0' could not be built: ValueError: level"),
        (
            "online-dpo",
            ["--env-mixture", '[{"id": "mrlm/Math-v0", "kwargs": {"level": 9}, "name": "hard"}]'],
            "env 'hard' could not be built: ValueError: level",
        ),
        (
            "magrpo",
            ["--env-kwargs", '{"num_agents": 0}'],
            "env 'mrlm/TeamSum-v0' could not be built: ValueError",
        ),
        (
            "ippo",
            ["--env-kwargs", '{"num_agents": 0}'],
            "env 'mrlm/TeamSum-v0' could not be built: ValueError",
        ),
    ],
)
def test_env_kwargs_the_env_refuses_fail_before_the_model_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    env: list[str],
    message: str,
) -> None:
    # As `mrlm-train eval` does: one env built and reset first, not the first rollout after the model.
    for module in ("grpo", "ppo", "online_dpo", "multi_agent"):
        monkeypatch.setattr(f"mrlm.train.algorithms.{module}.load_policy", _no_loading)
    assert main([command, *env, "--run.output-dir", str(tmp_path / "run"), "--dist.cpu"]) == 1
    assert message in _one_line(capsys, f"mrlm-train {command}: EnvFailedError: ")


def test_a_run_dir_where_no_file_can_be_made_fails_before_the_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root passes the permission bits of /proc (or of a root-squashed share), so the run directory
    # was refused only once the model had loaded and the run made its first file (others fail on the bits).
    monkeypatch.setattr("mrlm.train.algorithms.grpo.load_policy", _no_loading)
    assert main(_grpo(Path("/proc/mrlm-run"))) == 1
    error = _one_line(capsys, "mrlm-train grpo: OutputDirError: ")
    refused = "cannot be created: '/proc' refuses new files" if os.geteuid() == 0 else "is not writable"
    assert f"run.output_dir '/proc/mrlm-run' {refused}" in error


@pytest.mark.parametrize("command", ["magrpo", "eval"])
def test_an_agent_given_twice_in_agent_models_is_a_usage_error(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # tyro keeps the last pair of a key without a word; a config file's repeated key is refused too.
    argv = [command, "--agent-models", "first", "/nowhere", "second", "tiny", "first", "tiny"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"mrlm-train {command}: --agent-models gives 'first' twice ('/nowhere', then 'tiny'): give each once"
    )
