"""Every script in examples/ runs to completion, as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: Extra arguments that keep each example short in tests.
ARGS: dict[str, list[str]] = {
    "math_episode.py": ["--episodes", "5"],
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
