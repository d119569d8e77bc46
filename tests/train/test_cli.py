"""The mrlm-train command line: help, info, tiny-model, and the installed console script."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from mrlm.train.cli import main


def test_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "info" in out and "tiny-model" in out


@pytest.mark.parametrize("command", ["info", "tiny-model"])
def test_subcommand_help(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"mrlm-train {command}" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["no-such-command"], ["tiny-model"], ["info", "--bogus"]])
def test_usage_errors_exit_with_status_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_info_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["mrlm"]["mrlm-train"] is not None
    assert isinstance(info["devices"]["cpu_count"], int)


def test_info_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mrlm\n")
    assert "algorithms" in out


def test_tiny_model_writes_a_loadable_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "nested" / "tiny"
    argv = ["tiny-model", "--output", str(output), "--arch", "llama", "--hidden-size", "32"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "parameters" in out and str(output) in out

    model = AutoModelForCausalLM.from_pretrained(output)
    tokenizer = AutoTokenizer.from_pretrained(output)
    assert model.config.model_type == "llama"
    assert model.config.hidden_size == 32
    assert model.config.vocab_size == len(tokenizer) == 512
    assert tokenizer.eos_token == "<|im_end|>"


@pytest.mark.slow
def test_console_script_runs() -> None:
    # The script installed next to this interpreter, i.e. the workspace venv's entry point.
    script = Path(sys.executable).with_name("mrlm-train")
    executable = str(script) if script.exists() else shutil.which("mrlm-train")
    assert executable is not None, "mrlm-train console script is not installed"
    result = subprocess.run([executable, "info"], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "mrlm-train" in result.stdout


def test_tiny_model_arch_choices_match_the_builder() -> None:
    from mrlm.train.commands.tiny_model import TinyModelArgs
    from mrlm.train.tiny import Arch

    assert get_args(get_type_hints(TinyModelArgs)["arch"]) == get_args(Arch)


@pytest.mark.parametrize(("world_size", "handled"), [(None, True), ("1", True), ("2", False)])
def test_sigterm_is_handled_only_in_a_run_of_one_process(
    monkeypatch: pytest.MonkeyPatch, world_size: str | None, handled: bool
) -> None:
    """A torchrun worker keeps SIGTERM's default (it would save nothing, and a worker waiting in a
    collective would not run a handler in time); a single process turns it into Terminated."""
    from mrlm.train import cli

    seen: list[object] = []

    def main() -> int:
        seen.append(signal.getsignal(signal.SIGTERM))
        return 0

    def exit_process(status: int) -> None:
        raise SystemExit(status)

    if world_size is None:
        monkeypatch.delenv("WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("WORLD_SIZE", world_size)
    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(cli, "exit_process", exit_process)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit):
        cli.entry()
    assert (seen[0] is not before) is handled
    assert signal.getsignal(signal.SIGTERM) is before
