"""``pip install mrlm-envs`` gives a working env package with no torch: built wheels, fresh venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

EPISODE = """
import importlib.util, sys
import gymnasium
import mrlm.envs
assert importlib.util.find_spec("torch") is None, "torch is installed in the fresh venv"
assert importlib.util.find_spec("transformers") is None, "transformers is installed in the fresh venv"
env = mrlm.envs.make("mrlm/Math-v0", level=1, max_turns=2)
observation, info = env.reset(seed=0)
assert observation.startswith("What is"), observation
answer = env.unwrapped.task.answer
_, reward, terminated, truncated, info = env.step("\\\\boxed{%s}" % answer)
assert (reward, terminated, truncated) == (1.0, True, False), (reward, terminated, truncated)
from mrlm.proto.v1 import env_pb2
assert env_pb2.StepRequest(session_id="s").session_id == "s"
assert not any(name.split(".")[0] in ("torch", "transformers") for name in sys.modules)
print("episode ok", mrlm.envs.__file__)
"""


def _uv() -> str:
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv, "uv is needed to build the wheels (pip install uv)"
    return uv


def _run(*args: str | Path, cwd: Path = ROOT) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
def test_envs_and_proto_wheels_install_and_run_without_torch(tmp_path: Path) -> None:
    uv = _uv()
    dist = tmp_path / "dist"
    for package in ("mrlm-proto", "mrlm-envs"):
        _run(uv, "build", "--package", package, "--wheel", "--out-dir", dist)
    wheels = sorted(dist.glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["mrlm_envs", "mrlm_proto"]

    venv = tmp_path / "venv"
    _run(uv, "venv", "--python", sys.executable, venv)
    python = venv / "bin" / "python"
    _run(uv, "pip", "install", "--python", python, *wheels)

    out = _run(python, "-c", EPISODE, cwd=tmp_path)
    assert "episode ok" in out and str(venv) in out  # the installed wheel ran, not the workspace source
    listing = _run(venv / "bin" / "mrlm-envs", "list", cwd=tmp_path)
    assert "mrlm/Math-v0" in listing
