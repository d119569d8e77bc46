"""Gradient norm, clipping, and finding the parameter whose gradient went non-finite.

Works on plain tensors and on FSDP's DTensor shards alike: the norm of sharded gradients is
reduced over processes, so every process gets the same global norm and takes the same decision.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.distributed.tensor import DTensor

from mrlm.train.loop.distributed import gather_object


def total_norm(parameters: Sequence[torch.nn.Parameter]) -> float:
    """The 2-norm of all gradients together (inf or nan when some gradient is non-finite)."""
    grads = [param.grad for param in parameters if param.grad is not None]
    if not grads:
        return 0.0
    norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return float(norm.item())


def clip_(parameters: Sequence[torch.nn.Parameter], max_norm: float, norm: float) -> None:
    """Scale all gradients by ``min(1, max_norm / (norm + 1e-6))``, as torch's clip_grad_norm_ does."""
    coefficient = max_norm / (norm + 1e-6)
    if coefficient >= 1.0:
        return
    for param in parameters:
        if param.grad is not None:
            # A Python float multiplies plain and DTensor gradients alike.
            param.grad.mul_(coefficient)


def first_nonfinite(named_parameters: Sequence[tuple[str, torch.nn.Parameter]]) -> str | None:
    """Name of the first parameter (in the given order) with a non-finite gradient on any process.

    Collective under FSDP, where each process sees only its shard of each gradient; only called
    once a non-finite norm was found, so its cost does not matter.
    """
    local = len(named_parameters)
    for index, (_, param) in enumerate(named_parameters):
        grad = param.grad
        if grad is None:
            continue
        shard = grad.to_local() if isinstance(grad, DTensor) else grad
        if not bool(torch.isfinite(shard).all()):
            local = index
            break
    first = min(gather_object(local))
    return named_parameters[first][0] if first < len(named_parameters) else None
