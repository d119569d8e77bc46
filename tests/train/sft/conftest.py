"""Fixtures of the SFT tests (the tokenizer and model fixtures come from tests/train/conftest.py)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest


@pytest.fixture(scope="session")
def plain_tokenizer(tokenizer: Any) -> Any:
    """The tiny tokenizer with the ``{% generation %}`` markers stripped from its chat template."""
    plain = copy.deepcopy(tokenizer)
    plain.chat_template = re.sub(r"\{%-?\s*(end)?generation\s*-?%\}", "", tokenizer.chat_template)
    return plain
