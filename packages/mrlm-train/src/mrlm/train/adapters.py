"""One frozen base model with one LoRA adapter per agent (``policies="lora"`` of the multi-agent trainers).

:func:`agent_adapters` loads the base model once, freezes it and gives it one peft LoRA adapter per
agent, named after the agent; it returns one :class:`AgentAdapter` per agent. N agents then take
one model's memory plus N adapters (and their optimizer states), instead of N models.

An :class:`AgentAdapter` is a thin view of the shared peft model: a module that registers only its
own agent's adapter weights, reaches the base and the other adapters through the peft model
without registering them, and makes its adapter the active one before every forward. Whatever
looks at its parameters (``parameters()``, ``state_dict()``, ``.to()``'s caller, an optimizer, DDP,
a checkpoint) sees one agent's adapter and nothing else. Hence the choice of one view per agent
over one training-session model that holds every adapter, each agent's loss switching the active
adapter: with views each agent stays a model of its own in the session, exactly as with
``policies="per_agent"`` (its own optimizer, learning-rate schedule, gradient clipping and
``grad_norm/<agent>``, its own entry in checkpoints, its own ``final/<agent>/``), and the trainer's
step runs unchanged. One model holding every adapter would clip the agents' gradients by their
joint norm (an agent with large gradients would shrink every other agent's update) and write the
frozen base into every checkpoint.

Gradients: peft's ``set_adapter`` marks the adapters it deactivates as not trainable; here every
adapter stays trainable, since the agents' forwards of one update all run before its one backward.
An adapter takes no part in another agent's forward, so an agent's loss has no gradient on any
weight but its own adapter's, and none on the frozen base.

:class:`BaseReference` is the base with every adapter turned off: each agent's initial policy
(LoRA starts as the identity), so the KL reference costs no second copy of the model.

Limits: one view runs at a time (the active adapter is state of the shared model; the rollout
engine generates policy after policy, never two at once). DDP works: each view's DDP reduces its
own adapter's gradients and the base, frozen and loaded the same way on every process, needs no
reduction. FSDP does not: it would shard each view's adapter but not the base they share, so it is
refused (:class:`AdapterSetupError`).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from mrlm.train.policy import ModelConfig, import_peft, load_policy, lora_config

#: The LoRA rank of the agents' adapters when ``ModelConfig.lora_r`` is 0 (its "no LoRA" default).
DEFAULT_RANK = 8


class AdapterSetupError(ValueError):
    """Settings one base with an adapter per agent cannot run: an agent name peft cannot use as an
    adapter name, or a strategy that would shard the views but not the base (FSDP)."""


class SharedBase:
    """The peft model every agent's view uses, and which adapter is active in it.

    Args:
        model: a peft ``PeftModel`` with one LoRA adapter per name in ``adapters``.
        adapters: the adapter names (the agents).
    """

    def __init__(self, model: Any, adapters: Sequence[str]) -> None:
        self.model = model
        self.adapters = list(adapters)
        self.weights: dict[str, dict[str, torch.nn.Parameter]] = {
            name: adapter_weights(model, name) for name in self.adapters
        }
        self.active: str | None = None
        self.keep_trainable()

    def activate(self, adapter: str) -> None:
        """Make ``adapter`` the one the next forward runs through."""
        if adapter != self.active:
            self.model.set_adapter(adapter)
            self.active = adapter
            # set_adapter froze the other adapters; every one trains. Only on a switch: a forward
            # per generated token must not walk every adapter weight.
            self.keep_trainable()

    def keep_trainable(self) -> None:
        """Every adapter's weights trainable again, whatever peft switched off."""
        for weights in self.weights.values():
            for param in weights.values():
                param.requires_grad_(True)


def adapter_weights(model: Any, adapter: str) -> dict[str, torch.nn.Parameter]:
    """The LoRA weights of ``adapter`` in the peft ``model``, by their name in the model with the
    adapter's own path component dropped (``...q_proj.lora_A.<adapter>.weight`` -> ``...q_proj.lora_A.weight``).

    Read from peft's layers (each holds its adapters by name), never matched by name, so an agent
    called like a module (``mlp``) cannot pick up base weights.
    """
    from peft.tuners.tuners_utils import BaseTunerLayer

    weights: dict[str, torch.nn.Parameter] = {}
    for module_name, module in model.named_modules():
        if not isinstance(module, BaseTunerLayer):
            continue
        for layer_name in module.adapter_layer_names:
            per_adapter = getattr(module, layer_name)
            if adapter not in per_adapter:
                continue
            owner = per_adapter[adapter]
            named = (
                [("", owner)]
                if isinstance(owner, torch.nn.Parameter)
                else list(owner.named_parameters(recurse=True))
            )
            for param_name, param in named:
                key = ".".join(part for part in (module_name, layer_name, param_name) if part)
                weights[key] = param
    if not weights:
        raise AdapterSetupError(f"the model has no adapter {adapter!r}")
    return weights


def _key(name: str) -> str:
    # Module attribute names cannot hold dots; "/" keeps the model's path readable in checkpoints.
    return name.replace(".", "/")


class AgentAdapter(torch.nn.Module):
    """One agent's policy: the shared base with the agent's adapter active (see the module docstring).

    Its parameters are the agent's adapter weights alone (``adapter``, keyed by their path in the
    model with "/" for "."). ``forward`` takes what the causal LM's forward takes; ``train``/``eval``
    and ``.to()`` apply to the shared model too; ``save_pretrained`` writes the agent's adapter as a
    peft adapter directory (``PeftModel.from_pretrained(base, directory)`` loads it).
    """

    def __init__(self, shared: SharedBase, agent: str) -> None:
        super().__init__()
        self.agent = agent
        self.shared = shared  # a plain object: not registered, so the base is no parameter of this view
        self.adapter = torch.nn.ParameterDict(
            {_key(name): param for name, param in shared.weights[agent].items()}
        )

    def forward(self, *args: Any, logits_to_keep: int | torch.Tensor = 0, **kwargs: Any) -> Any:
        # logits_to_keep is spelled out so callers that look for it in the signature pass it on.
        self.shared.activate(self.agent)
        if not (isinstance(logits_to_keep, int) and logits_to_keep == 0):
            kwargs["logits_to_keep"] = logits_to_keep
        return self.shared.model(*args, **kwargs)

    def unregistered_modules(self) -> tuple[torch.nn.Module, ...]:
        """The shared model this view runs without registering it: every agent's view runs it, with
        its own adapter made active, so two views must never run at once (see
        :func:`~mrlm.train.loop.cpu_threads.independent_cpu_models`)."""
        return (self.shared.model,)

    @property
    def config(self) -> Any:
        """The base model's config (its architecture, for memory estimates)."""
        return self.shared.model.config

    @property
    def generation_config(self) -> Any:
        """The base model's generation config (its stop tokens)."""
        return self.shared.model.generation_config

    def get_base_model(self) -> Any:
        """The base causal LM, without peft's wrapper (the one whose forward signature counts)."""
        return self.shared.model.get_base_model()

    def train(self, mode: bool = True) -> AgentAdapter:
        super().train(mode)
        self.shared.model.train(mode)  # dropout lives in the shared modules
        return self

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> AgentAdapter:
        # .to(device) of the view moves the base too; the adapter weights are the shared model's own
        # parameters, converted in place, so the second pass over them here changes nothing.
        self.shared.model._apply(fn, recurse)
        super()._apply(fn, recurse)
        return self

    def save_pretrained(self, save_directory: str | Path, **_: Any) -> None:
        """Write this agent's adapter to ``save_directory`` (``adapter_config.json`` and weights)."""
        target = Path(save_directory)
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            # peft writes an adapter other than "default" into a folder named after it.
            self.shared.model.save_pretrained(scratch, selected_adapters=[self.agent])
            written = Path(scratch) / self.agent if self.agent != "default" else Path(scratch)
            for item in written.iterdir():
                shutil.move(str(item), str(target / item.name))


class BaseReference(torch.nn.Module):
    """The shared base with every adapter turned off, in eval mode: the agents' common initial
    policy as a frozen reference. No parameters of its own; ``.to()`` moves the shared model."""

    def __init__(self, shared: SharedBase) -> None:
        super().__init__()
        self.shared = shared

    def forward(self, *args: Any, logits_to_keep: int | torch.Tensor = 0, **kwargs: Any) -> Any:
        if not (isinstance(logits_to_keep, int) and logits_to_keep == 0):
            kwargs["logits_to_keep"] = logits_to_keep
        model = self.shared.model
        was_training = model.training
        model.eval()  # as a separately loaded reference would be: no dropout
        try:
            with model.disable_adapter():
                return model(*args, **kwargs)
        finally:
            model.train(was_training)
            self.shared.keep_trainable()  # leaving disable_adapter froze the adapters

    @property
    def config(self) -> Any:
        return self.shared.model.config

    def get_base_model(self) -> Any:
        return self.shared.model.get_base_model()

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> BaseReference:
        self.shared.model._apply(fn, recurse)
        super()._apply(fn, recurse)
        return self


def agent_adapters(
    config: ModelConfig, agents: Sequence[str], *, seed: int
) -> tuple[dict[str, AgentAdapter], Any]:
    """Load ``config``'s model once, freeze it and give it one LoRA adapter per agent; return each
    agent's :class:`AgentAdapter` and the tokenizer.

    The adapters use ``config``'s LoRA fields, with rank ``lora_r`` or :data:`DEFAULT_RANK` when it is
    0. Their initial weights are drawn from ``seed`` (LoRA's B matrices start at zero, so every agent
    starts as the base), the same on every process and in every run with that seed; the global
    random state is left as it was.

    Raises:
        ImportError: peft is not installed.
        AdapterSetupError: no agents, or an agent name peft cannot use (empty, or with a ".").
        NoChatTemplateError: the model's tokenizer has no chat template, which the agents' turns need.
    """
    if not agents:
        raise AdapterSetupError("one adapter per agent needs at least one agent")
    bad = [agent for agent in agents if not agent or "." in agent]
    if bad:
        raise AdapterSetupError(
            f"agent names {bad} cannot name adapters (they must be non-empty, without '.')"
        )
    peft = import_peft("policies='lora'", "or use policies='per_agent'")
    base, tokenizer = load_policy(dataclasses.replace(config, lora_r=0), chat=True)
    lora = lora_config(config, rank=config.lora_r or DEFAULT_RANK)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = peft.get_peft_model(base, lora, adapter_name=agents[0])
        for agent in agents[1:]:
            model.add_adapter(agent, lora)
    shared = SharedBase(model, agents)
    return {agent: AgentAdapter(shared, agent) for agent in agents}, tokenizer


def base_references(views: Mapping[str, AgentAdapter]) -> dict[str, BaseReference]:
    """One :class:`BaseReference` per view, by the same names (each a module of its own: a session
    refuses one module under two names), all running the one shared base."""
    return {name: BaseReference(view.shared) for name, view in views.items()}
