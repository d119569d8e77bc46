"""Fixtures of the rollout tests (the tokenizer fixture comes from tests/train/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.train.generation.lively import build_lively_model


@pytest.fixture(scope="session")
def lively_model(tokenizer: Any) -> Any:
    """A tiny qwen2 model with varied outputs; shared, so tests must not modify it."""
    return build_lively_model(tokenizer)
