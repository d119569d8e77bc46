"""The optimizer: AdamW over the trainable parameters, decaying matrices only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from mrlm.train.loop.config import OptimConfig


def build_optimizer(
    named_parameters: Sequence[tuple[str, torch.nn.Parameter]], config: OptimConfig
) -> torch.optim.AdamW:
    """AdamW over ``named_parameters`` with two groups: decayed and not.

    Parameters with two or more dimensions (linear weights, embeddings) get ``weight_decay``;
    biases and norm scales get none, since shrinking them towards 0 only hurts. The dimension is
    that of the full tensor, also when FSDP holds a shard of it. Groups with no parameters are left
    out; the order of parameters is that of ``named_parameters``.

    Plain CPU and CUDA floating-point parameters get the fused implementation (one kernel for all
    tensors, several times faster than torch's per-tensor loop on CPU); FSDP's sharded parameters
    keep torch's default.
    """
    if not named_parameters:
        raise ValueError("there are no trainable parameters (all have requires_grad=False?)")
    decayed = [param for _, param in named_parameters if param.ndim >= 2]
    kept = [param for _, param in named_parameters if param.ndim < 2]
    groups = [
        {"params": params, "weight_decay": decay}
        for params, decay in ((decayed, config.weight_decay), (kept, 0.0))
        if params
    ]
    return torch.optim.AdamW(
        groups,
        lr=config.learning_rate,
        betas=(config.adam_beta1, config.adam_beta2),
        eps=config.adam_eps,
        **_implementation([param for _, param in named_parameters]),
    )


def _implementation(params: Sequence[torch.Tensor]) -> dict[str, Any]:
    fusable = all(
        not isinstance(p, DTensor) and p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point
        for p in params
    )
    return {"fused": True} if fusable else {}
