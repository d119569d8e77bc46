"""Every script in examples/ runs to completion, as a user would run it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
}


def _examples() -> list[str]:
    return sorted(path.name for path in EXAMPLES.glob("*.py"))


def test_examples_exist() -> None:
    assert {"custom_env.py", "math_episode.py"} <= set(_examples())


@pytest.mark.slow
@pytest.mark.parametrize("name", _examples())
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
