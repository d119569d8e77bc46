"""A pool of frozen past snapshots of a policy, from which self-play opponents are drawn.

A snapshot is a copy on CPU of the policy's *trained* parameters at some step (all of them in full
fine-tuning, the adapters with LoRA): loaded into a frozen copy of the initial model it rebuilds
the policy of that step exactly. Under FSDP each process holds the shards it trains, and loads
them into its shards of the frozen copy, which is sharded the same way.

The pool keeps the first snapshot (the initial policy, step 0) for good and at most ``size``
snapshots in all: adding one more drops the oldest of the others. Which snapshot plays at a step
is drawn from ``seed`` and the step alone, so it is the same on every process and after a resume.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch.distributed.tensor import DTensor

#: Parameter name -> its values (this process's shard under FSDP), on CPU.
Snapshot = dict[str, torch.Tensor]


def take_snapshot(named: Iterable[tuple[str, torch.nn.Parameter]]) -> Snapshot:
    """A CPU copy of the parameters ``named`` (a session's trained ones), detached from training."""
    return {name: _local(param).detach().to("cpu", copy=True) for name, param in named}


@torch.no_grad()
def load_snapshot(model: torch.nn.Module, snapshot: Mapping[str, torch.Tensor]) -> None:
    """Copy ``snapshot`` into ``model``'s parameters of the same names; the others stay as they are.

    Raises:
        KeyError: a snapshot parameter ``model`` does not have.
    """
    params = dict(model.named_parameters())
    missing = sorted(set(snapshot) - set(params))
    if missing:
        raise KeyError(f"the model has no parameters {missing[:5]} of the snapshot")
    for name, values in snapshot.items():
        _local(params[name]).copy_(values)


class SnapshotPool:
    """At most ``size`` snapshots by step, the first one kept for good (see the module docstring)."""

    def __init__(self, size: int, seed: int) -> None:
        if size < 1:
            raise ValueError(f"a snapshot pool holds at least one snapshot, got size {size}")
        self.size = size
        self.seed = seed
        self.snapshots: dict[int, Snapshot] = {}
        """The snapshots by the step they were taken at, oldest first."""

    @property
    def steps(self) -> list[int]:
        return list(self.snapshots)

    def wants(self, step: int) -> bool:
        """Whether :meth:`add` at ``step`` would keep the snapshot (so that one is worth taking)."""
        return step not in self.snapshots and (not self.snapshots or self.size > 1)

    def add(self, step: int, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as the policy of ``step``, dropping the oldest but the first when full."""
        if not self.wants(step):
            return
        self.snapshots[step] = snapshot
        if len(self.snapshots) > self.size:
            del self.snapshots[self.steps[1]]

    def sample(self, step: int) -> tuple[int, Snapshot]:
        """The opponent of ``step``: a snapshot drawn uniformly, from ``seed`` and ``step`` only.

        Raises:
            LookupError: the pool is empty.
        """
        if not self.snapshots:
            raise LookupError("the snapshot pool is empty: add the initial policy first")
        chosen = self.steps[random.Random(self.seed * 1_000_003 + step).randrange(len(self.snapshots))]
        return chosen, self.snapshots[chosen]

    def state_dict(self) -> dict[str, Any]:
        """The pool's size, snapshots (tensors) and their steps, for a checkpoint's extra state."""
        return {
            "size": self.size,
            "steps": self.steps,
            "snapshots": [self.snapshots[step] for step in self.steps],
        }

    @staticmethod
    def saved_size(state: Mapping[str, Any]) -> int | None:
        """The size of the pool :meth:`state_dict` saved, where it says (older checkpoints do not)."""
        size = state.get("size")
        return size if isinstance(size, int) else None

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue with the snapshots of :meth:`state_dict` (a pool of the same size's)."""
        self.snapshots = {
            int(step): dict(snapshot)
            for step, snapshot in zip(state["steps"], state["snapshots"], strict=True)
        }


def _local(param: torch.Tensor) -> torch.Tensor:
    return param.to_local() if isinstance(param, DTensor) else param
