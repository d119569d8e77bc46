"""Fixtures of the rollout tests (the tokenizer fixture comes from tests/train/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.train.tiny import build_tiny_tokenizer
from tests.train.generation.lively import build_lively_model


@pytest.fixture(scope="session")
def lively_model(tokenizer: Any) -> Any:
    """A tiny qwen2 model with varied outputs; shared, so tests must not modify it."""
    return build_lively_model(tokenizer)


@pytest.fixture(scope="session")
def other_tokenizer() -> Any:
    """A second, smaller tokenizer (another vocabulary), for a second policy."""
    return build_tiny_tokenizer(vocab_size=384)


@pytest.fixture(scope="session")
def other_model(other_tokenizer: Any) -> Any:
    """A second tiny model of another size and vocabulary; shared, so tests must not modify it."""
    return build_lively_model(other_tokenizer, seed=1, hidden_size=32, num_heads=2, num_kv_heads=1)
