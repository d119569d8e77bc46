"""The run settings: validation, and config.yaml written at the start of a session."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig
from mrlm.train.loop.serialize import to_yaml
from tests.train.loop.helpers import session_for


@pytest.mark.parametrize(
    ("factory", "kwargs", "message"),
    [
        (OptimConfig, {"lr_schedule": "exp"}, "lr_schedule"),
        (OptimConfig, {"warmup_steps": -1}, "warmup_steps"),
        (OptimConfig, {"max_grad_norm": -1.0}, "max_grad_norm"),
        (OptimConfig, {"adam_beta2": 1.0}, "adam_beta2"),
        (OptimConfig, {"learning_rate": float("nan")}, "learning_rate must be a finite number >= 0, got nan"),
        (OptimConfig, {"learning_rate": float("inf")}, "learning_rate must be a finite number >= 0, got inf"),
        (OptimConfig, {"weight_decay": float("nan")}, "weight_decay must be a finite number >= 0, got nan"),
        (OptimConfig, {"adam_eps": float("nan")}, "adam_eps must be a finite number > 0, got nan"),
        (OptimConfig, {"max_grad_norm": float("nan")}, "max_grad_norm must be a finite number >= 0"),
        (DistributedConfig, {"strategy": "deepspeed"}, "strategy"),
        (DistributedConfig, {"mixed_precision": "fp8"}, "mixed_precision"),
        (DistributedConfig, {"gradient_accumulation_steps": 0}, "gradient_accumulation_steps"),
        (DistributedConfig, {"cpu_threads": -1}, "cpu_threads"),
        (RunConfig, {"max_steps": 0}, "max_steps"),
        (RunConfig, {"report_to": ("mlflow",)}, "report_to"),
        (RunConfig, {"keep_checkpoints": -1}, "keep_checkpoints"),
    ],
)
def test_bad_values_fail_at_construction(factory: type, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


def test_every_field_has_a_help_line() -> None:
    # tyro turns the attribute docstrings into --help; a field without one has no help.
    import inspect

    for cls in (OptimConfig, DistributedConfig, RunConfig):
        source = inspect.getsource(cls)
        for name in cls.__dataclass_fields__:
            block = source.split(f"    {name}:", 1)[1].splitlines()
            assert block[1].strip().startswith('"""'), f"{cls.__name__}.{name} has no docstring"


def test_report_to_list_becomes_tuple() -> None:
    assert RunConfig(report_to=["wandb"]).report_to == ("wandb",)  # type: ignore[arg-type]


@dataclass
class AlgorithmConfig:
    run: RunConfig
    optim: OptimConfig = field(default_factory=OptimConfig)
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    group_size: int = 8


def test_config_yaml_is_written_and_round_trips(tmp_path: Path, fresh_model) -> None:
    out = tmp_path / "run"
    config = AlgorithmConfig(run=RunConfig(output_dir=str(out), report_to=(), progress_bar=False))
    with session_for(fresh_model, out, config=config):
        pass
    loaded = yaml.safe_load((out / "config.yaml").read_text())
    assert loaded["group_size"] == 8
    assert loaded["run"]["output_dir"] == str(out)
    assert loaded["run"]["report_to"] == []
    assert RunConfig(**{**loaded["run"], "report_to": tuple(loaded["run"]["report_to"])}) == config.run


def test_default_config_holds_the_three_sections(tmp_path: Path, fresh_model) -> None:
    with session_for(fresh_model, tmp_path, optim={"warmup_steps": 3}):
        pass
    loaded = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert set(loaded) == {"run", "optim", "dist"}
    assert loaded["optim"]["warmup_steps"] == 3


def test_to_yaml_handles_paths_and_tuples() -> None:
    text = to_yaml({"path": Path("/a/b"), "keys": ("x", "y"), "nested": {"n": None}})
    assert yaml.safe_load(text) == {"path": "/a/b", "keys": ["x", "y"], "nested": {"n": None}}
