"""The train tests run with the Hugging Face Hub switched off (see conftest.py)."""

from __future__ import annotations

import huggingface_hub.constants


def test_hub_is_offline() -> None:
    assert huggingface_hub.constants.HF_HUB_OFFLINE
    assert huggingface_hub.constants.is_offline_mode()
