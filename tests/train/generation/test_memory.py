"""A generation that cannot fit in memory is refused naming max_new_tokens, before anything is allocated."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.generation.memory import GenerationMemoryError, check_fits, kv_bytes_per_position

CPU = torch.device("cpu")


def test_kv_bytes_follow_the_model_config(lively_model: Any) -> None:
    config = lively_model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    expected = 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * 4  # float32
    assert kv_bytes_per_position(lively_model) == expected > 0


def test_the_bound_is_compared_with_the_device_memory(
    lively_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    per_position = 12 + kv_bytes_per_position(lively_model)
    needed = 4 * (10 + 90) * per_position
    monkeypatch.setattr("mrlm.train.generation.memory.device_memory", lambda device: needed)
    check_fits(lively_model, 4, 10, 90, CPU)  # exactly fits
    with pytest.raises(GenerationMemoryError, match=r"^max_new_tokens=91 is too large: 4 replies"):
        check_fits(lively_model, 4, 10, 91, CPU)
    monkeypatch.setattr("mrlm.train.generation.memory.device_memory", lambda device: None)
    check_fits(lively_model, 4, 10, 10**15, CPU)  # unknown memory: not checked


def test_a_huge_budget_is_refused_before_sampling(
    lively_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_sampling(*args: object) -> None:
        raise AssertionError("sampling started")

    generator = HFGenerator(lively_model, tokenizer)
    monkeypatch.setattr(generator, "_sample", no_sampling)
    with pytest.raises(GenerationMemoryError, match=r"max_new_tokens=1000000000000 is too large"):
        generator.generate([[5, 6, 7]], SamplingParams(max_new_tokens=10**12))


@pytest.mark.parametrize(
    "failure",
    [
        torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
        RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"),
    ],
)
def test_an_allocation_failure_while_sampling_names_max_new_tokens(
    lively_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    def failing(*args: object) -> None:
        raise failure

    generator = HFGenerator(lively_model, tokenizer)
    monkeypatch.setattr(generator, "_sample", failing)
    with pytest.raises(
        GenerationMemoryError, match=r"^out of memory generating 2 replies of up to max_new_tokens=8"
    ):
        generator.generate([[5, 6, 7], [8]], SamplingParams(max_new_tokens=8))


def test_other_errors_while_sampling_pass_unchanged(
    lively_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: object) -> None:
        raise RuntimeError("shape mismatch")

    generator = HFGenerator(lively_model, tokenizer)
    monkeypatch.setattr(generator, "_sample", failing)
    with pytest.raises(RuntimeError, match=r"^shape mismatch$"):
        generator.generate([[5]], SamplingParams(max_new_tokens=8))
