"""Fixtures of the training-loop tests: a fresh tiny model per test (training changes it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast


@pytest.fixture
def fresh_model(tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    """A newly built tiny model (always the same initial weights), free to train."""
    from mrlm.train.tiny import build_tiny_model

    return build_tiny_model(tokenizer)
