"""YAML configs: scalar fields get values of their type, or an error naming the field and the value."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.train.algorithms.grpo import GRPOConfig
from mrlm.train.algorithms.sft import SFTConfig
from mrlm.train.config_io import ConfigError, from_dict


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
