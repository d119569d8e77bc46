"""Every script in examples/ runs to completion, as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: Extra arguments that keep each example short in tests.
ARGS: dict[str, list[str]] = {
    "math_episode.py": ["--episodes", "5"],
    "ppo_quickstart.py": ["--steps", "2"],
    "ppo_code.py": ["--steps", "1", "--prompts-per-step", "2"],
    "ppo_tool_use.py": ["--steps", "2", "--prompts-per-step", "2"],
    "ppo_distributed.py": ["--steps", "2"],
    "ppo_math.py": ["--steps", "2", "--sft-steps", "5", "--problems-per-step", "8"],
    "magrpo_team_envs.py": ["--steps", "1"],
    "magrpo_comlrl_port.py": ["--steps", "2"],
    "magrpo_self_play_debate.py": ["--steps", "1"],
    "ippo_team_sum.py": ["--steps", "1", "--sft-steps", "2", "--tasks-per-step", "2", "--eval-tasks", "4"],
    "magrpo_lora_agents.py": ["--steps", "1", "--agents", "2"],
    "ppo_hybrid.py": ["--warmup-steps", "30", "--samples", "1", "--ppo-steps", "2", "--ppo-prompts", "8"],
    "eval_quickstart_pass_at_k.py": ["--sft-steps", "30", "--k", "4", "--problems", "40"],
    "collect_then_sft.py": ["--warmup-steps", "20", "--samples", "2", "--problems", "40", "--epochs", "2"],
    "sft_from_trajectories.py": ["--warmup-steps", "20", "--samples", "2", "--epochs", "1"],
    "trl_grpo_env.py": ["--steps", "1", "--tasks", "4"],
}


#: Examples whose default run is a learning result, run whole (and checked) by their own test.
LEARNING = {"dpo_math.py", "online_dpo_math.py"}


def _examples() -> list[str]:
    return sorted(path.name for path in EXAMPLES.glob("*.py"))


def test_examples_exist() -> None:
    assert {"custom_env.py", "math_episode.py"} <= set(_examples())


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in _examples() if name not in LEARNING])
def test_example_runs(name: str, tmp_path: Path) -> None:
    args = ARGS.get(name, [])
    if name == "build_tiny_model.py":
        args = ["--output", str(tmp_path / "tiny")]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert result.stdout.strip(), f"{name} printed nothing"


def _run_json(name: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.slow
def test_dpo_examples_raise_the_warm_models_success(tmp_path: Path) -> None:
    """DPO on the model's own right and wrong answers, then online DPO from the same warm-up (30 of
    its 60 steps), each lift greedy success on the quickstart's problems (38.3% after SFT -> 46.3%
    and 53.1% on a 2-core CPU)."""
    offline = _run_json("dpo_math.py", tmp_path, "--output-dir", "dpo")
    assert offline["pairs"] > 100
    assert offline["after"] >= offline["before"] + 0.03, offline
    online = _run_json(
        "online_dpo_math.py",
        tmp_path,
        "--output-dir",
        "online",
        "--sft-model",
        offline["sft_model"],
        "--steps",
        "30",
    )
    assert online["before"] == offline["before"]  # the same warm model, evaluated the same way
    assert online["after"] >= online["before"] + 0.05, online
    assert online["last_reward"] > online["first_reward"], online


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(path.stem for path in (EXAMPLES / "train").glob("*.yaml")))
def test_train_config_runs_its_algorithm(name: str, tmp_path: Path) -> None:
    """``mrlm-train train --config examples/train/<algorithm>.yaml`` trains the algorithm its
    ``algorithm:`` key names (two steps here), then resumes for a third with the bare ``--resume``."""
    from mrlm.train.algorithms import ALGORITHMS
    from mrlm.train.cli import main

    assert name in ALGORITHMS
    config = str(EXAMPLES / "train" / f"{name}.yaml")
    out = str(tmp_path / "run")
    cwd = Path.cwd()
    os.chdir(EXAMPLES.parent)  # the files name their data relative to the repository root
    try:
        assert (
            main(
                [
                    "train",
                    "--config",
                    config,
                    "--output",
                    out,
                    "--run.max-steps",
                    "2",
                    "--run.no-progress-bar",
                ]
            )
            == 0
        )
        assert (
            main(
                [
                    "train",
                    "--config",
                    config,
                    "--output",
                    out,
                    "--run.max-steps",
                    "3",
                    "--resume",
                    "--run.no-progress-bar",
                ]
            )
            == 0
        )
    finally:
        os.chdir(cwd)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]


def test_every_algorithm_has_a_train_config() -> None:
    from mrlm.train.algorithms import ALGORITHMS

    assert {path.stem for path in (EXAMPLES / "train").glob("*.yaml")} == set(ALGORITHMS)


@pytest.mark.parametrize("name", sorted(path.name for path in EXAMPLES.glob("*.yaml")))
def test_example_configs_load(name: str) -> None:
    """Each YAML example fills the config of the command its name starts with (grpo_, sft_)."""
    from mrlm.train.commands import COMMANDS
    from mrlm.train.config_io import load_config

    command = next(c for c in COMMANDS if name.startswith(c.name + "_"))
    config = load_config(command.args, EXAMPLES / name)
    assert isinstance(config, command.args)


@pytest.mark.slow
def test_ppo_math_config_trains(tmp_path: Path) -> None:
    """``mrlm-train ppo --config examples/ppo_math.yaml`` runs: one metrics row per step, and the
    final model with its value head."""
    from mrlm.train.cli import main

    out = tmp_path / "run"
    args = ["ppo", "--config", str(EXAMPLES / "ppo_math.yaml"), "--run.max-steps", "2"]
    assert main([*args, "--run.output-dir", str(out), "--run.no-progress-bar"]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert (out / "final" / "config.json").is_file()
    assert (out / "final" / "value_head.safetensors").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["ppo_quickstart.py", "ppo_code.py", "ppo_hybrid.py", "ppo_tool_use.py", "ippo_team_sum.py"]
)
def test_an_example_refuses_an_output_dir_holding_files_it_did_not_write(name: str, tmp_path: Path) -> None:
    # These empty their --output-dir on every run: a mistyped one must not lose a user's files.
    mine = tmp_path / "work" / "thesis.tex"
    mine.parent.mkdir()
    mine.write_text("years of work")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--output-dir", str(mine.parent)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "holds files that no earlier run of" in result.stderr and "Traceback" not in result.stderr
    assert mine.read_text() == "years of work"
