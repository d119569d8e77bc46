"""Refusing a generation that cannot fit in memory, naming ``max_new_tokens`` instead of crashing.

A batch lays out its buffers (outputs, attention mask, the KV cache of the direct decoder) for the
whole token budget up front, so a huge ``max_new_tokens`` fails at once, and on CPU it may not fail
cleanly at all: an allocation past the free memory can succeed and get the process killed when it
is filled. :func:`check_fits` compares a lower bound of the memory a batch needs with the device's
total memory before anything is allocated; :func:`out_of_memory` turns an allocation failure that
still happens into the same kind of error.
"""

from __future__ import annotations

import os
from typing import Any

import torch

_GIB = 1 << 30
# Per row and position: the sampled token id (int64) and its log-prob (float32).
_OUTPUT_BYTES = 8 + 4


class GenerationMemoryError(MemoryError):
    """A generation needs more memory than the device has; the message names ``max_new_tokens``."""


def check_fits(model: Any, rows: int, prompt_width: int, max_new_tokens: int, device: torch.device) -> None:
    """Raise :class:`GenerationMemoryError` when the batch surely cannot fit on ``device``.

    The bound counts the outputs and the KV cache of every layer for ``prompt_width +
    max_new_tokens`` positions of ``rows`` rows; the device's total memory is the limit (unknown
    devices are not checked), so a batch is refused only when it could never fit.
    """
    capacity = device_memory(device)
    if capacity is None:
        return
    needed = rows * (prompt_width + max_new_tokens) * (_OUTPUT_BYTES + kv_bytes_per_position(model))
    if needed > capacity:
        raise GenerationMemoryError(
            f"max_new_tokens={max_new_tokens} is too large: {rows} replies of up to that many tokens "
            f"after prompts of {prompt_width} need at least {needed / _GIB:.4g} GiB, more than the "
            f"{capacity / _GIB:.4g} GiB of {device.type} memory; lower max_new_tokens"
        )


def out_of_memory(
    error: BaseException, rows: int, prompt_width: int, max_new_tokens: int
) -> GenerationMemoryError:
    """The error to raise instead of an allocation failure during generation."""
    return GenerationMemoryError(
        f"out of memory generating {rows} replies of up to max_new_tokens={max_new_tokens} tokens "
        f"after prompts of {prompt_width}; lower max_new_tokens or the number of replies per batch "
        f"({type(error).__name__}: {error})"
    )


def is_allocation_failure(error: BaseException) -> bool:
    """Whether ``error`` is torch failing to allocate memory (CUDA or CPU)."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and "can't allocate memory" in str(error)


def kv_bytes_per_position(model: Any) -> int:
    """Bytes of keys and values one position of one row takes over all layers (0 when unknown)."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    layers = getattr(config, "num_hidden_layers", None)
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None)
    if head_dim is None and heads:
        head_dim = getattr(config, "hidden_size", 0) // heads
    if not (isinstance(layers, int) and isinstance(kv_heads, int) and isinstance(head_dim, int)):
        return 0
    parameter = next(iter(model.parameters()), None)
    element = parameter.element_size() if parameter is not None else 0
    return 2 * layers * kv_heads * head_dim * element


def available_cpu_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """Bytes of RAM the kernel estimates it can give to new allocations (``MemAvailable``), or None
    where that is not reported (not Linux)."""
    try:
        with open(meminfo, encoding="ascii") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def device_memory(device: torch.device) -> int | None:
    """Total memory of ``device`` in bytes: the GPU's, or the machine's RAM for the CPU; None if unknown."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    if device.type == "cpu":
        try:
            return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
        except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name
            return None
    return None
