"""The models of one training session: trainable ones with their optimizer and schedule, frozen ones.

A session trains any number of named models together (a policy and a critic, one policy per agent)
and holds frozen ones beside them (a reference policy). Each trainable model has its own
:class:`~mrlm.train.loop.config.OptimConfig`: optimizer, learning-rate schedule and gradient clipping.
A frozen model is placed on the device like the others and, under FSDP, sharded like them, so no
process holds a whole copy of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from mrlm.train.loop.config import OptimConfig
from mrlm.train.loop.optim import build_optimizer
from mrlm.train.loop.schedule import build_scheduler

#: The name a session gives a model passed alone.
POLICY = "policy"


@dataclass
class TrainedModel:
    """One trainable model of a session.

    Attributes:
        name: its name in the session, in checkpoints and under ``final/``.
        model: the module to call: DDP-wrapped, FSDP-sharded or plain.
        named: the trained parameters by name (DTensor shards under FSDP), in optimizer order.
        optimizer: AdamW over ``named`` (see :func:`~mrlm.train.loop.optim.build_optimizer`).
        scheduler: its learning-rate schedule, stepped once per training step.
        config: the optimizer settings, ``max_grad_norm`` included.
    """

    name: str
    model: torch.nn.Module
    named: list[tuple[str, torch.nn.Parameter]]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    config: OptimConfig

    @property
    def unwrapped(self) -> torch.nn.Module:
        """The module without its DDP wrapper (under FSDP, the sharded module itself)."""
        if isinstance(self.model, torch.nn.parallel.DistributedDataParallel):
            module: torch.nn.Module = self.model.module
            return module
        return self.model

    @property
    def parameters(self) -> list[torch.nn.Parameter]:
        return [param for _, param in self.named]

    @property
    def lr(self) -> float:
        """The learning rate the next update uses (of the first parameter group)."""
        return float(self.optimizer.param_groups[0]["lr"])


def trained_model(
    name: str, wrapped: torch.nn.Module, names: list[str], config: OptimConfig, max_steps: int
) -> TrainedModel:
    """Build the optimizer and schedule of ``wrapped`` over its parameters called ``names``."""
    module = wrapped.module if isinstance(wrapped, torch.nn.parallel.DistributedDataParallel) else wrapped
    parameters = dict(module.named_parameters())
    named = [(parameter_name, parameters[parameter_name]) for parameter_name in names]
    optimizer = build_optimizer(named, config)
    return TrainedModel(
        name, wrapped, named, optimizer, build_scheduler(optimizer, config, max_steps), config
    )


def named_models(models: torch.nn.Module | Mapping[str, torch.nn.Module]) -> dict[str, torch.nn.Module]:
    """``models`` by name: a module alone is called :data:`POLICY`.

    Raises:
        ValueError: no model, a name that is empty or not a str, or one module given twice.
    """
    named = {POLICY: models} if isinstance(models, torch.nn.Module) else dict(models)
    if not named:
        raise ValueError("a training session needs at least one trainable model")
    check_names(named)
    return named


def check_names(models: Mapping[str, torch.nn.Module], taken: Iterable[str] = ()) -> None:
    """Raise ValueError for a bad or repeated name, or a module given twice."""
    seen = set(taken)
    modules: set[int] = set()
    for name, module in models.items():
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ValueError(f"model names must be non-empty strings without '/', got {name!r}")
        if name in seen:
            raise ValueError(f"two models are called {name!r}")
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"model {name!r} is a {type(module).__name__}, not a torch.nn.Module")
        if id(module) in modules:
            raise ValueError(f"model {name!r} is a module given under another name too")
        seen.add(name)
        modules.add(id(module))


def per_model(value: Any, names: Iterable[str], what: str) -> dict[str, Any]:
    """``value`` for each of ``names``: a mapping gives each its own (missing ones get None), any
    other value is shared.

    Raises:
        ValueError: a mapping naming a model that does not exist.
    """
    names = list(names)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"{what} names models that do not exist: {unknown} (models: {names})")
        return {name: value.get(name) for name in names}
    return dict.fromkeys(names, value)


def select_trainable(
    model: torch.nn.Module, trainable_parameters: Iterable[torch.nn.Parameter] | None
) -> list[str]:
    """Names of the parameters to train; freezes the others when a subset is given."""
    named = list(model.named_parameters())
    if trainable_parameters is None:
        return [name for name, param in named if param.requires_grad]
    wanted = {id(param) for param in trainable_parameters}
    names = [name for name, param in named if id(param) in wanted]
    if len(names) != len(wanted):
        raise ValueError("trainable_parameters holds parameters that are not parameters of the model")
    for _, param in named:
        param.requires_grad_(id(param) in wanted)
    return names
