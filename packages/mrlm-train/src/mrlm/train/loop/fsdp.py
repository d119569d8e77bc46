"""Sharding a model with torch's FSDP2 (``fully_shard``), and reading it back whole.

Each transformer block (the classes a Hugging Face model lists in ``_no_split_modules``, e.g.
``Qwen2DecoderLayer``) becomes its own FSDP unit, then the root wraps the rest (embeddings, final
norm, head; tied embeddings stay together in the root). Every parameter becomes a DTensor
sharded on dim 0 over a 1-D mesh of all processes, so each process holds about 1/N of the
parameters, of their gradients and (since the optimizer is built on the shards) of the optimizer
state. Blocks gather their full weights just for their forward and backward.

Parameters stay in their own dtype (float32): mixed precision is the same autocast in every
strategy, so numerics do not depend on the strategy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

from mrlm.train.loop.errors import DistributedSetupError


def block_classes(model: torch.nn.Module) -> set[str]:
    """Names of the block classes to shard one by one: every ``_no_split_modules`` found in ``model``."""
    names: set[str] = set()
    for module in model.modules():
        names.update(getattr(module, "_no_split_modules", None) or ())
    return names


def shard_model(model: torch.nn.Module, *, device_type: str, world_size: int) -> torch.nn.Module:
    """Shard ``model`` in place over all processes and return it (now also an ``FSDPModule``).

    ``model`` must already be on its device. Raises :class:`DistributedSetupError` when some
    parameter did not end up sharded, rather than train a model that is only partly distributed.
    """
    mesh = init_device_mesh(device_type, (world_size,))
    names = block_classes(model)
    blocks = [module for module in model.modules() if type(module).__name__ in names]
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    unsharded = [name for name, param in model.named_parameters() if not isinstance(param, DTensor)]
    if unsharded:
        raise DistributedSetupError(f"fully_shard left parameters unsharded: {unsharded[:5]}")
    return model


@contextmanager
def gathered_weights(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Hold every FSDP unit of ``model`` unsharded inside the block, for generation. Collective.

    Each process enters and leaves together (one all-gather per unit on entry, nothing on exit).
    Inside, forwards run on the full weights without any communication, so each process may call
    the model any number of times, with any shapes: sampling replies of different lengths needs
    no lockstep between processes. The cost is a whole copy of the weights per process for the
    duration. On exit the shards are restored, and with them the usual reshard-after-forward
    behaviour (blocks reshard, the root keeps its weights for the backward that follows).
    """
    if not isinstance(model, FSDPModule):
        raise TypeError("gathered_weights needs a model sharded with fully_shard")
    units = [module for module in model.modules() if isinstance(module, FSDPModule)]
    model.set_reshard_after_forward(False, recurse=True)
    try:
        for unit in units:
            unit.unshard()
        yield model
    finally:
        for unit in units:
            unit.reshard()
        for unit in units:
            # fully_shard's defaults: blocks free their gathered weights after forward; the root
            # does not, since backward would gather them again right away.
            unit.set_reshard_after_forward(unit is not model, recurse=False)


def set_gradient_sync(model: torch.nn.Module, enabled: bool) -> None:
    """Turn the reduce-scatter of gradients after backward on or off (off while accumulating)."""
    if not isinstance(model, FSDPModule):
        raise TypeError("set_gradient_sync needs a model sharded with fully_shard")
    model.set_requires_gradient_sync(enabled)


def full_state_dict(model: torch.nn.Module) -> dict[str, Any]:
    """The unsharded state dict on the main process (CPU tensors), empty elsewhere. Collective.

    Gathers one tensor at a time to CPU, so the main process needs the model's size in CPU memory,
    not on its device.
    """
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options)


def local_numel(param: torch.Tensor) -> int:
    """Elements of ``param`` held by this process (its shard for a DTensor)."""
    return param.to_local().numel() if isinstance(param, DTensor) else param.numel()
