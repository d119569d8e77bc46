"""YAML configs: fields get values of their type, or an error naming the field and the value; keys once."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from mrlm.train.algorithms.dpo import DPOConfig
from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.ppo import PPOConfig
from mrlm.train.algorithms.sft import SFTConfig
from mrlm.train.cli import main
from mrlm.train.commands import COMMANDS
from mrlm.train.commands.plot import PlotArgs
from mrlm.train.config_io import ConfigError, from_dict, load_mapping
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.policy import ModelConfig


def test_numbers_are_converted_to_the_field_type() -> None:
    # YAML reads 1e-4 (no dot) as a string; 1 is an int where a float is wanted.
    config = from_dict(
        GRPOConfig, {"optim": {"learning_rate": "1e-4", "max_grad_norm": 1}, "group_size": 4.0}
    )
    assert config.optim.learning_rate == 1e-4
    assert isinstance(config.optim.max_grad_norm, float)
    assert config.group_size == 4 and isinstance(config.group_size, int)


def test_optional_numbers_take_none_or_a_number() -> None:
    assert from_dict(SFTConfig, {"data": "x.jsonl", "epochs": None}).epochs is None
    assert from_dict(SFTConfig, {"data": "x.jsonl", "min_reward": 0}).min_reward == 0.0
    with pytest.raises(ConfigError, match=r"^run.yaml.epochs: expected a number, got 'two'$"):
        from_dict(SFTConfig, {"data": "x.jsonl", "epochs": "two"}, where="run.yaml")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"optim": {"learning_rate": "abc"}}, r"^c.optim.learning_rate: expected a number, got 'abc'$"),
        ({"optim": {"learning_rate": [1]}}, r"^c.optim.learning_rate: expected a number, got \[1\]$"),
        ({"temperature": True}, r"^c.temperature: expected a number, got True$"),
        ({"group_size": True}, r"^c.group_size: expected an integer, got True$"),
        ({"run": {"max_steps": "1.5"}}, r"^c.run.max_steps: expected an integer, got '1.5'$"),
        ({"ignore_stop": "yes"}, r"^c.ignore_stop: expected true or false, got 'yes'$"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_field_and_the_value(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(GRPOConfig, data, where="c")


def _fifo_fed(tmp_path: Path, text: bytes) -> tuple[Path, threading.Thread]:
    """A named pipe that a thread writes ``text`` into, as ``--config <(...)`` gives a program."""
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)

    def feed() -> None:
        with contextlib.suppress(BrokenPipeError), open(pipe, "wb") as handle:
            handle.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return pipe, writer


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda path: path, "is a directory"),
        (lambda path: path / "absent.yaml", "does not exist"),
        (lambda path: Path(os.devnull), "is neither a regular file nor a pipe"),
        (
            lambda path: _written(path / "latin1.yaml", "group_size: 4 # caf\xe9\n".encode("latin-1")),
            "not UTF-8 text",
        ),
        (lambda path: _written(path / "list.yaml", b"- 1\n- 2\n"), "the top level must be a mapping"),
    ],
)
def test_a_config_file_that_cannot_be_read_is_named_with_what_is_wrong(
    tmp_path: Path, make: Any, message: str
) -> None:
    path = make(tmp_path)
    with pytest.raises(ConfigError, match=message) as caught:
        load_mapping(path)
    assert str(path) in str(caught.value)


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_config_comes_through_a_pipe(tmp_path: Path) -> None:
    pipe, writer = _fifo_fed(tmp_path, b"group_size: 3\nrun: {max_steps: 2}\n")
    assert load_mapping(pipe) == {"group_size": 3, "run": {"max_steps": 2}}
    writer.join(timeout=10)


def test_an_endless_pipe_is_refused_past_the_size_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mrlm.train.config_io.MAX_CONFIG_BYTES", 1 << 10)
    pipe, writer = _fifo_fed(tmp_path, b"# padding\n" * 1000)
    with pytest.raises(ConfigError, match="larger than"):
        load_mapping(pipe)
    writer.join(timeout=10)


def _captured_grpo(monkeypatch: pytest.MonkeyPatch) -> list[GRPOConfig]:
    """The configs `mrlm-train grpo` would train with; nothing trains."""
    seen: list[GRPOConfig] = []

    def train(config: GRPOConfig) -> Path:
        seen.append(config)
        return Path("final")

    monkeypatch.setattr("mrlm.train.algorithms.grpo.train", train)
    return seen


def test_a_flag_replaces_a_value_of_the_file_that_its_check_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file was checked as the defaults, before the flags applied, so the flag meant to fix it
    # never got the chance: "ConfigError: run.yaml: kl_coef must be a finite number >= 0, got inf".
    seen = _captured_grpo(monkeypatch)
    config = tmp_path / "run.yaml"
    config.write_text("kl_coef: .inf\nrun:\n  max_steps: -3\n  output_dir: out\n")
    assert main(["grpo", "--config", str(config), "--kl-coef", "0.05", "--run.max-steps", "2"]) == 0
    assert (seen[0].kl_coef, seen[0].run.max_steps, seen[0].run.output_dir) == (0.05, 2, "out")
    assert (
        main(["train", "--config", str(_with_algorithm(config)), "--kl-coef", "0", "--run.max-steps", "1"])
        == 0
    )
    assert (seen[1].kl_coef, seen[1].run.max_steps) == (0.0, 1)


def test_a_value_of_the_file_that_no_flag_replaces_is_still_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = _captured_grpo(monkeypatch)
    config = tmp_path / "run.yaml"
    config.write_text("kl_coef: .inf\nrun:\n  max_steps: -3\n")
    with pytest.raises(SystemExit) as exit_:  # another flag: tyro refuses the built config
        main(["grpo", "--config", str(config), "--kl-coef", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "max_steps must be >= 1, got -3" in " ".join(err.replace("\u2502", " ").split())
    # tyro names the setting, not where its value came from: the last line names the file
    assert err.splitlines()[-1] == (
        f"mrlm-train grpo: the --config file on its own is refused too: {config}.run: max_steps must be "
        f">= 1, got -3; {config}: kl_coef must be a finite number >= 0, got inf"
    )
    with pytest.raises(SystemExit):
        main(["train", "--config", str(_with_algorithm(config)), "--kl-coef", "0"])
    assert f"refused too: {config.with_name('train.yaml')}.run: max_steps" in capsys.readouterr().err
    assert main(["grpo", "--config", str(config)]) == 1  # no flag: the file's error, naming the file
    assert capsys.readouterr().err.startswith(f"mrlm-train grpo: ConfigError: {config}.run: max_steps")
    assert not seen
    # Keys and types are still checked at once, flags or not.
    config.write_text("kl_coeff: 0.1\n")
    assert main(["grpo", "--config", str(config), "--kl-coef", "0"]) == 1
    assert "unknown key 'kl_coeff'" in capsys.readouterr().err


def _with_algorithm(config: Path) -> Path:
    train_file = config.with_name("train.yaml")
    train_file.write_text("algorithm: grpo\n" + config.read_text())
    return train_file


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (
            DPOConfig,
            {"reference": "modle"},
            r"^c.reference: expected one of 'model', 'precomputed', 'none', ",
        ),
        (
            DPOConfig,
            {"loss_type": "sigmoidal"},
            r"^c.loss_type: .*, got 'sigmoidal' \(did you mean 'sigmoid'\?\)$",
        ),
        (
            PPOConfig,
            {"critic": "value-head"},
            r"^c.critic: .*, got 'value-head' \(did you mean 'value_head'\?\)$",
        ),
        (PPOConfig, {"kl_in": "rewards"}, r"^c.kl_in: expected one of 'reward', 'loss', got 'rewards' "),
        (
            GRPOConfig,
            {"std_scaling": "groups"},
            r"^c.std_scaling: .*, got 'groups' \(did you mean 'group'\?\)$",
        ),
        (GRPOConfig, {"aggregation": 1}, r"^c.aggregation: expected one of 'sequence_mean', .*, got 1$"),
        (SFTConfig, {"data": "x", "target": "world"}, r"^c.target: expected one of .*'both', got 'world'$"),
        (MAGRPOConfig, {"kind": "aecc"}, r"^c.kind: expected one of 'parallel', 'aec', got 'aecc' "),
        # `mixed_precision: no` is YAML for false, not the word "no"
        (
            GRPOConfig,
            {"dist": {"mixed_precision": False}},
            r"^c.dist.mixed_precision: .*, got False; quote the word",
        ),
    ],
)
def test_a_literal_field_takes_only_its_values(cls: type, data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(cls, data, where="c")


def test_a_literal_field_takes_each_of_its_values_and_none_where_optional() -> None:
    assert from_dict(DPOConfig, {"reference": "none"}).reference == "none"
    assert from_dict(PPOConfig, {"critic": "model", "kl_in": "loss"}).kl_in == "loss"
    assert from_dict(MAGRPOConfig, {"kind": "aec"}).kind == "aec"
    assert from_dict(MAGRPOConfig, {"kind": None}).kind is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"data": 5}, r"^c.data: expected text, got a number \(5\); quote it to mean text$"),
        ({"data": None}, r"^c.data: expected text, got nothing \(null\)$"),
        ({"run": {"output_dir": 5}}, r"^c.run.output_dir: expected text, got a number \(5\)"),
        ({"run": {"resume": 5}}, r"^c.run.resume: expected text, got a number \(5\)"),  # `resume: 0005`
        ({"run": {"output_dir": {"a": 1}}}, r"^c.run.output_dir: expected text, got a mapping"),
        ({"model": {"name_or_path": ["tiny"]}}, r"^c.model.name_or_path: expected text, got a list"),
        (
            {"model": {"attn_implementation": True}},
            r"^c.model.attn_implementation: expected text, got a bool",
        ),
        (
            {"run": {"report_to": "wandb"}},
            r"^c.run.report_to: expected a list, got text \('wandb'\); write \[wandb\]$",
        ),
        ({"run": {"report_to": [5]}}, r"^c.run.report_to\[0\]: expected text, got a number \(5\)"),
        ({"model": {"lora_target_modules": [None]}}, r"^c.model.lora_target_modules\[0\]: expected text"),
    ],
)
def test_a_text_field_refuses_a_value_that_is_not_text(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(SFTConfig, {"data": "x.jsonl", **data}, where="c")


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (GRPOConfig, {"env_id": 5}, r"^c.env_id: expected text, got a number \(5\)"),
        (GRPOConfig, {"env_kwargs": [1]}, r"^c.env_kwargs: expected text, got a list"),
        (GRPOConfig, {"env_mixture": {"id": "x"}}, r"^c.env_mixture: expected text, got a mapping"),
        (MAGRPOConfig, {"agent_models": ["a"]}, r"^c.agent_models: expected a mapping, got a list"),
        (MAGRPOConfig, {"agent_models": {"a": 1}}, r"^c.agent_models.a: expected text, got a number"),
        (PlotArgs, {"run_dir": 5}, r"^c.run_dir: expected text, got a number"),
        (PlotArgs, {"run_dir": "r", "keys": "reward"}, r"^c.keys: expected a list, got text"),
    ],
)
def test_other_text_fields_refuse_a_value_that_is_not_text(
    cls: type, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(cls, data, where="c")


def test_text_lists_mappings_and_paths_take_their_values() -> None:
    config = from_dict(
        SFTConfig,
        {
            "data": "x",
            "run": {"report_to": ["tensorboard"]},
            "model": {"name_or_path": "tiny", "lora_target_modules": ["q_proj"]},
        },
    )
    assert config.run.report_to == ("tensorboard",) and config.model.lora_target_modules == ("q_proj",)
    agents = {"policies": "per_agent", "agent_models": {"a": "tiny"}}
    assert from_dict(MAGRPOConfig, agents).agent_models == {"a": "tiny"}
    plot = from_dict(PlotArgs, {"run_dir": "runs/x", "keys": ["reward"], "output": "p.png"})
    assert (plot.run_dir, plot.keys, plot.output) == (Path("runs/x"), ("reward",), Path("p.png"))


def test_json_fields_may_be_written_as_yaml() -> None:
    mixture = [{"id": "mrlm/Math-v0", "weight": 2}]
    config = from_dict(GRPOConfig, {"env_kwargs": {"level": 1}, "env_mixture": mixture})
    assert (json.loads(config.env_kwargs), json.loads(config.env_mixture)) == ({"level": 1}, mixture)


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("run: {output_dir: mine}\ngroup_size: 4\nrun: {max_steps: 2}\n", "run", (1, 3)),
        ("run:\n  output_dir: mine\n  max_steps: 2\n  output_dir: theirs\n", "output_dir", (2, 4)),
    ],
)
def test_a_key_given_twice_is_refused_with_both_lines(
    tmp_path: Path, text: str, key: str, lines: tuple[int, int]
) -> None:
    path = _written(tmp_path / "run.yaml", text.encode())
    with pytest.raises(ConfigError) as caught:
        load_mapping(path)
    assert str(caught.value) == (
        f"{path}: key {key!r} is given twice in one mapping, on lines {lines[0]} and {lines[1]}; keep one"
    )


def test_a_merged_key_may_be_overridden(tmp_path: Path) -> None:
    text = b"base: &base {max_steps: 2, seed: 1}\nrun:\n  <<: *base\n  seed: 3\n"
    assert load_mapping(_written(tmp_path / "run.yaml", text))["run"] == {"max_steps": 2, "seed": 3}


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("**/*.yaml")), ids=lambda path: str(path.relative_to(EXAMPLES))
)
def test_every_example_config_loads(path: Path) -> None:
    """Each YAML example fills the config of its algorithm: its `algorithm:` key, else the command
    its name starts with (grpo_math.yaml)."""
    data = load_mapping(path)
    name = data.pop("algorithm", None) or next(c.name for c in COMMANDS if path.stem.startswith(c.name + "_"))
    args = next(c.args for c in COMMANDS if c.name == name)
    assert isinstance(from_dict(args, data, where=str(path)), args)


def test_a_value_of_the_wrong_type_is_refused_although_flags_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flags may replace a value the config's own check refuses, not a value of the wrong type."""
    seen = _captured_grpo(monkeypatch)
    config = tmp_path / "run.yaml"
    for text, error in [
        ("std_scaling: groups\n", "std_scaling: expected one of 'group', 'batch', 'none', got 'groups'"),
        ("run: {output_dir: 5}\n", "run.output_dir: expected text, got a number (5)"),
    ]:
        config.write_text(text)
        assert main(["grpo", "--config", str(config), "--std-scaling", "group", "--run.output-dir", "o"]) == 1
        assert f"ConfigError: {config}.{error}" in capsys.readouterr().err
    assert not seen


def test_a_nested_mapping_keeps_the_algorithms_own_defaults(tmp_path: Path) -> None:
    # Built from RunConfig's class defaults, `run: {seed: 3}` moved a MAGRPO run to runs/run for 100
    # steps; and `model: {dtype: ...}` lost GRPO's default model (a required key then).
    from mrlm.train.config_io import load_config
    from mrlm.train.loop import RunConfig

    default = MAGRPOConfig()
    assert (default.run.output_dir, default.run.max_steps) != (RunConfig().output_dir, RunConfig().max_steps)
    config = tmp_path / "run.yaml"
    config.write_text("run:\n  seed: 3\n")
    assert load_config(MAGRPOConfig, config).run == dataclasses.replace(default.run, seed=3)
    config.write_text("model:\n  dtype: float32\n")
    model = load_config(GRPOConfig, config).model
    assert (model.name_or_path, model.dtype) == (GRPOConfig().model.name_or_path, "float32")


@pytest.mark.parametrize(
    ("cls", "values", "message"),
    [
        (
            GRPOConfig,
            {"std_scaling": "Group"},
            "std_scaling: expected one of 'group', 'batch', 'none', got 'Group'",
        ),
        (GRPOConfig, {"group_size": 2.5}, "group_size: expected an integer, got a number (2.5)"),
        (GRPOConfig, {"model": "tiny"}, "model: expected a ModelConfig, got text ('tiny')"),
        (GRPOConfig, {"env_kwargs": {"level": 1}}, "env_kwargs: expected text, got a mapping"),
        (RunConfig, {"max_steps": 2.5}, "max_steps: expected an integer, got a number (2.5)"),
        (RunConfig, {"report_to": "tensorboard"}, "report_to: expected a list, got text ('tensorboard')"),
        (OptimConfig, {"learning_rate": "1e-3"}, "learning_rate: expected a number, got text ('1e-3')"),
        (ModelConfig, {"name_or_path": None}, "name_or_path: expected text, got nothing (null)"),
        (DPOConfig, {"data": "x.jsonl", "loss_type": "sigmod"}, "loss_type: expected one of 'sigmoid', "),
        (SFTConfig, {"data": "x.jsonl", "target": "assistants"}, "did you mean 'assistant'"),
        (MAGRPOConfig, {"joint": "crossed"}, "joint: expected one of 'align', 'cross', got 'crossed'"),
    ],
)
def test_a_config_built_in_python_is_checked_as_a_file_would_be(
    cls: Any, values: dict[str, Any], message: str
) -> None:
    # Neither the command line nor a config file checked these: the config does, naming the field,
    # before any model loads (a misspelled choice failed after the model loaded, or not at all).
    with pytest.raises(ConfigError, match=re.escape(message)):
        cls(**values)


def test_values_of_the_right_kinds_pass_the_check() -> None:
    import numpy as np

    # numpy's ints, an int for a float, and a path for text, as Python callers pass them.
    run: dict[str, Any] = {"output_dir": Path("runs/x"), "max_steps": 3}
    config = GRPOConfig(group_size=int(np.int64(4)), run=RunConfig(**run))
    assert config.group_size == 4 and OptimConfig(learning_rate=1).learning_rate == 1
    assert GRPOConfig(**{"group_size": np.int64(4)}).group_size == 4
