"""Fixtures shared by the environment tests."""

from __future__ import annotations

import pytest

import mrlm.envs
from tests.envs.toy_games import register_toy_games

register_toy_games()


@pytest.fixture
def registered_ids() -> list[str]:
    return [entry.id for entry in mrlm.envs.list_envs()]
