"""Fixtures for the mrlm.train tests, which never reach the Hugging Face Hub.

The offline switches are set when this file is imported, before any test module imports
huggingface_hub or transformers (both read them once, at import), so any attempt to download
fails loudly instead of silently using the network.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def fixed_cpu_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions keep torch's thread count instead of following other processes' load (tested in
    tests/train/loop/test_cpu_threads.py): runs compared bitwise, a resumed run against an
    uninterrupted one, must not see a neighbour change it between them."""
    import torch

    from mrlm.train.loop import cpu_threads, session

    monkeypatch.setattr(
        session, "CpuThreads", lambda threads: cpu_threads.CpuThreads(threads or torch.get_num_threads())
    )


@pytest.fixture
def two_threads() -> Iterator[None]:
    """torch computes with 2 threads in the test (on any machine), and with its count before after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tokenizer() -> PreTrainedTokenizerFast:
    """The default tiny tokenizer; shared, so tests must not modify it."""
    from mrlm.train.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()


@pytest.fixture(scope="session")
def model(tokenizer: PreTrainedTokenizerFast) -> PreTrainedModel:
    """The default tiny qwen2 model; shared, so tests must not modify it."""
    from mrlm.train.tiny import build_tiny_model

    return build_tiny_model(tokenizer)


@pytest.fixture(scope="session")
def saved_dir(
    tmp_path_factory: pytest.TempPathFactory, model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast
) -> Path:
    """A directory holding the default tiny model and tokenizer, written with save_pretrained."""
    from mrlm.train.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny"), model, tokenizer)
