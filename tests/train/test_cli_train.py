"""``mrlm-train train --config run.yaml``: the file's ``algorithm`` picks the command, the rest is its
config, ``--output``/``--resume`` are shorthands, flags override, and mistakes are named in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mrlm.train import commands
from mrlm.train.algorithms import ALGORITHMS
from mrlm.train.cli import main

TRAINABLE = sorted(c.name for c in commands.COMMANDS if c.name in ALGORITHMS)


def _capturing(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every command records what it was given instead of running."""
    seen: list[tuple[str, Any]] = []

    def recorder(name: str) -> Any:
        def run(config: Any) -> int:
            seen.append((name, config))
            return 0

        return run

    patched = tuple(dataclasses.replace(c, run=recorder(c.name)) for c in commands.COMMANDS)
    monkeypatch.setattr("mrlm.train.cli.COMMANDS", patched)
    return seen


def test_every_training_command_is_reachable() -> None:
    assert {"grpo", "ppo", "sft", "magrpo", "ippo"} <= set(TRAINABLE)


@pytest.mark.parametrize("algorithm", TRAINABLE)
def test_the_file_configures_the_algorithm_it_names(
    algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``train --config`` gives the algorithm's command exactly what ``<algorithm> --config`` of the
    same file (without its ``algorithm`` key) and the long flags give it."""
    seen = _capturing(monkeypatch)
    body = "run: {max_steps: 7, seed: 3, save_every: 5}\noptim: {learning_rate: 0.002}\n"
    if algorithm == "sft":
        body += "data: chats.jsonl\n"  # the one setting SFT has no default for
    (tmp_path / "train.yaml").write_text(f"algorithm: {algorithm}\n{body}")
    (tmp_path / "plain.yaml").write_text(body)
    out = str(tmp_path / "out")
    assert main(["train", "--config", str(tmp_path / "train.yaml"), "--output", out, "--resume"]) == 0
    plain = ["--config", str(tmp_path / "plain.yaml"), "--run.output-dir", out, "--run.resume", "latest"]
    assert main([algorithm, *plain]) == 0
    (name, ours), (_, theirs) = seen
    assert name == algorithm
    assert ours == theirs
    assert (ours.run.max_steps, ours.run.output_dir, ours.run.resume) == (7, out, "latest")
    assert ours.optim.learning_rate == pytest.approx(0.002)


def test_flags_override_the_file_and_resume_takes_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _capturing(monkeypatch)
    file = tmp_path / "run.yaml"
    file.write_text("algorithm: magrpo\ngroup_size: 4\nrun: {max_steps: 7}\n")
    argv = ["train", "--config", str(file), "--group-size", "3", "--resume=runs/x/checkpoints/step-4"]
    assert main(argv) == 0
    config = seen[0][1]
    assert (config.group_size, config.run.max_steps) == (3, 7)
    assert config.run.resume == "runs/x/checkpoints/step-4"


def test_an_algorithm_reads_a_train_file_that_names_it_and_refuses_one_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mrlm-train grpo --config examples/train/grpo.yaml`` works as ``train --config`` of it does;
    the same file given to ``ppo`` is refused in one line that says which command runs it."""
    seen = _capturing(monkeypatch)
    file = tmp_path / "run.yaml"
    file.write_text("algorithm: grpo\ngroup_size: 3\nrun: {max_steps: 7}\n")
    assert main(["grpo", "--config", str(file)]) == 0
    assert main(["train", "--config", str(file)]) == 0
    (_, named), (_, trained) = seen
    assert named == trained and named.group_size == 3

    assert main(["ppo", "--config", str(file)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mrlm-train ppo: ConfigError: "), err
    assert "for 'grpo'" in err and f"mrlm-train train --config {file}" in err, err


@pytest.mark.parametrize("on_in_file", [True, False])
def test_a_boolean_flag_overrides_the_file_whichever_way_the_file_sets_it(
    on_in_file: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ``--X`` and ``--no-X`` exist whatever the file's value (a run's saved config.yaml fed back
    with the command line that made it), and the flag wins."""
    seen = _capturing(monkeypatch)
    file = tmp_path / "run.yaml"
    value = "true" if on_in_file else "false"
    file.write_text(f"dynamic_sampling: {value}\nrun: {{progress_bar: {value}}}\n")
    assert main(["grpo", "--config", str(file), "--no-dynamic-sampling", "--run.no-progress-bar"]) == 0
    assert main(["grpo", "--config", str(file), "--dynamic-sampling", "--run.progress-bar"]) == 0
    (_, off), (_, on) = seen
    assert (off.dynamic_sampling, off.run.progress_bar) == (False, False)
    assert (on.dynamic_sampling, on.run.progress_bar) == (True, True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("group_size: 4\n", "`train` needs an `algorithm:` key, one of .*grpo"),
        ("algorithm: dpo2\n", "unknown algorithm 'dpo2'; known: .*magrpo"),
        ("algorithm: grpo\nrun: {max_step: 3}\n", r"unknown key 'max_step' \(did you mean 'max_steps'\?\)"),
        ("algorithm: plot\n", "unknown algorithm 'plot'"),
    ],
)
def test_a_file_that_does_not_fit_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    import re

    file = tmp_path / "run.yaml"
    file.write_text(text)
    assert main(["train", "--config", str(file)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mrlm-train train: ConfigError: "), err
    assert re.search(message, err), err


def test_train_help_says_what_the_command_takes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: mrlm-train train --config FILE")
    assert "--output DIR" in text and "--resume [CKPT]" in text
    assert all(name in text for name in TRAINABLE)


@pytest.mark.parametrize("algorithm", TRAINABLE)
def test_each_algorithm_help_names_the_config_flag(
    algorithm: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--config`` is taken before tyro parses (so tyro lists no such flag): the help says it."""
    with pytest.raises(SystemExit) as exit_info:
        main([algorithm, "--help"])
    assert exit_info.value.code == 0
    assert "--config FILE" in capsys.readouterr().out


def test_train_without_a_config_says_what_it_needs() -> None:
    with pytest.raises(SystemExit, match="`train` needs --config FILE"):
        main(["train", "--output", "runs/x"])


@pytest.mark.slow
def test_a_run_from_the_file_resumes_with_the_shorthand(tmp_path: Path) -> None:
    """A real GRPO run from a file: two steps with a checkpoint at 2, then ``--resume`` continues to 3."""
    file = tmp_path / "run.yaml"
    file.write_text(
        "algorithm: grpo\ngroup_size: 2\nprompts_per_step: 1\nmicro_batch_size: 2\nmax_new_tokens: 2\n"
        "run: {max_steps: 2, save_every: 2, progress_bar: false}\n"
    )
    out = tmp_path / "out"
    assert main(["train", "--config", str(file), "--output", str(out)]) == 0
    assert (
        main(["train", "--config", str(file), "--output", str(out), "--resume", "--run.max-steps", "3"]) == 0
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert (out / "final" / "config.json").is_file()
