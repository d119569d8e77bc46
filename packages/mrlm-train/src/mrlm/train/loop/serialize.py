"""The run's config as plain data and YAML (what config.yaml and checkpoints hold)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import yaml


def to_plain(value: Any) -> Any:
    """Dataclasses, mappings, tuples, paths and enums as dicts, lists, strings and numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_plain(item) for item in value]
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def to_yaml(config: Mapping[str, Any]) -> str:
    """Plain config as YAML, keys in the order given."""
    return yaml.safe_dump(to_plain(config), sort_keys=False, allow_unicode=True)
