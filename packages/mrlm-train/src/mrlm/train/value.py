"""Critics: value models (a causal LM's backbone with a scalar head) and a value head on the policy.

A **value model** is a model of its own. Its class is transformers' ``AutoModelForTokenClassification`` with ``num_labels=1`` (for a Qwen2
policy, ``Qwen2ForTokenClassification``): a plain transformers class, so a saved critic loads back
with ``AutoModelForTokenClassification.from_pretrained(path)`` and nothing of this project.

A **value head** (:class:`PolicyWithValueHead`) is one linear layer on the policy's last hidden
state: the policy and its critic share the trunk and one forward gives both log-probs and values,
at little more memory than the policy alone. It saves as the policy (``save_pretrained``, loads
with ``AutoModelForCausalLM``) plus :data:`VALUE_HEAD_FILE` beside it
(:func:`load_policy_with_value_head` loads both back).

Alignment with log-probs: :func:`token_values` returns ``values[:, t]``, the value of the state in
which token ``t`` is generated (the prefix ``tokens[:t]``), read at position ``t - 1`` exactly as
the log-prob of token ``t`` is read from the logits there (see
:func:`~mrlm.train.generation.logprobs.token_logprobs`). Per-token advantages then line up with
per-token log-probs under the same mask.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForTokenClassification

from mrlm.train.generation.direct import DirectModel, direct_model_or_reason
from mrlm.train.generation.logprobs import first_scored_column, position_ids_from_mask
from mrlm.train.generation.sampling import selected_logprobs
from mrlm.train.ops.entropy import token_entropy
from mrlm.train.policy import TINY, ModelConfig, load_policy, model_not_found, resolve_model_source


def value_model_from(policy: Any, *, seed: int = 0) -> Any:
    """A value model sharing ``policy``'s architecture and initial backbone weights, with a new
    scalar head drawn under ``seed`` (the global RNG is left as it was).

    Starting from the policy's weights is the usual choice for a critic (it reads text as the
    policy does); the head starts small, so initial values are close to 0.
    """
    with torch.random.fork_rng(devices=[]), torch.device("cpu"):
        torch.manual_seed(seed)
        config = copy.deepcopy(policy.config)
        config.num_labels = 1
        config.classifier_dropout = 0.0  # transformers' default of 0.1 would make values noisy
        critic = AutoModelForTokenClassification.from_config(config, dtype=next(policy.parameters()).dtype)
    backbone = getattr(policy, critic.base_model_prefix)
    getattr(critic, critic.base_model_prefix).load_state_dict(backbone.state_dict())
    critic.eval()
    return critic


def load_value_model(config: ModelConfig, *, seed: int = 0) -> Any:
    """The critic for the policy ``config`` names: its backbone and a new scalar head.

    ``"tiny"`` builds it from the tiny local policy; a name or path loads the backbone with
    ``AutoModelForTokenClassification.from_pretrained(..., num_labels=1)`` (a saved critic loads
    back whole the same way).
    """
    if config.name_or_path == TINY:
        policy, _ = load_policy(ModelConfig(name_or_path=TINY, dtype=config.dtype))
        return value_model_from(policy, seed=seed)
    dtype = None if config.dtype == "auto" else getattr(torch, config.dtype)
    # Set on the config, not passed to from_pretrained: a keyword the config class does not
    # define (classifier_dropout, for most causal LMs) would go to the model's __init__ and fail.
    source = resolve_model_source(config.name_or_path)  # a missing path is named, never a Hub request
    try:
        model_config = AutoConfig.from_pretrained(source, num_labels=1)
        model_config.classifier_dropout = 0.0  # transformers' default of 0.1 would make values noisy
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            critic = AutoModelForTokenClassification.from_pretrained(
                source, config=model_config, dtype=dtype or "auto"
            )
    except OSError as err:
        raise model_not_found(source, err) from err
    critic.eval()
    return critic


def token_values(critic: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``[B, T]`` float32 values: ``values[:, t]`` is the value of the prefix ``tokens[:t]`` (0 at
    ``t = 0``, which has no prefix). Gradients flow unless the caller disables them.

    Args:
        critic: a value model (see :func:`value_model_from`) returning ``.logits`` ``[B, T, 1]``.
        input_ids: ``[B, T]`` whole sequences, padding included.
        attention_mask: ``[B, T]`` 1 on real tokens.
    """
    if input_ids.shape[1] < 2:
        return torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    inputs, attention = input_ids[:, :-1], attention_mask[:, :-1]
    out = critic(input_ids=inputs, attention_mask=attention, position_ids=position_ids_from_mask(attention))
    values = out.logits[..., 0].float()  # [B, T - 1]: position t - 1 values token t's state
    return torch.nn.functional.pad(values, (1, 0))


#: The value head's weights, saved beside the policy's by :meth:`PolicyWithValueHead.save_pretrained`.
VALUE_HEAD_FILE = "value_head.safetensors"


@dataclass
class PolicyOutput:
    """What one forward of :class:`PolicyWithValueHead` gives, each ``[B, T]`` float32 aligned
    with ``input_ids`` (see the module docstring) and 0 off the scored tokens: their log-probs, the
    values of the states that generate them, and their entropy when asked for (else None)."""

    logprobs: torch.Tensor
    values: torch.Tensor
    entropy: torch.Tensor | None = None


class PolicyWithValueHead(torch.nn.Module):
    """A causal LM (``policy``) and a scalar value head on its final hidden state.

    ``forward(input_ids, attention_mask, completion_mask, temperature, with_entropy=False)``
    returns a :class:`PolicyOutput` from one pass of the trunk; generation uses :attr:`policy`
    itself. The head starts at zero (every value 0, and the trunk unchanged by the value loss
    until the head has grown), so adding it changes nothing of the policy.
    """

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy
        first = next(policy.parameters())
        self.value_head = torch.nn.Linear(
            int(policy.config.hidden_size), 1, dtype=first.dtype, device=first.device
        )
        torch.nn.init.zeros_(self.value_head.weight)
        torch.nn.init.zeros_(self.value_head.bias)

    @property
    def config(self) -> Any:
        """The policy's config."""
        return self.policy.config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        completion_mask: torch.Tensor,
        temperature: float = 1.0,
        with_entropy: bool = False,
    ) -> PolicyOutput:
        scored = completion_mask.bool()
        if input_ids.shape[1] < 2:
            zeros = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
            return PolicyOutput(zeros, zeros.clone(), zeros.clone() if with_entropy else None)
        # A peft model injects its adapters into the causal LM's own modules: call those.
        lm = self.policy.get_base_model() if hasattr(self.policy, "get_base_model") else self.policy
        states, first = self._scored_states(lm, input_ids, attention_mask, scored)
        values = torch.nn.functional.pad(self.value_head(states)[..., 0].float(), (first, 0))
        values = torch.where(scored, values, torch.zeros_like(values))
        logits = lm.get_output_embeddings()(states)  # tokens first .. T - 1
        logp = torch.nn.functional.pad(
            selected_logprobs(logits, input_ids[:, first:], temperature), (first, 0)
        )
        logp = torch.where(scored, logp, torch.zeros_like(logp))
        entropy = None
        if with_entropy:
            entropy = torch.nn.functional.pad(token_entropy(logits, temperature), (first, 0))
            entropy = torch.where(scored, entropy, torch.zeros_like(entropy))
        return PolicyOutput(logp, values, entropy)

    @staticmethod
    def _scored_states(
        lm: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, scored: torch.Tensor
    ) -> tuple[torch.Tensor, int]:
        """The final hidden states predicting columns ``first ..`` and ``first`` (see
        :meth:`~mrlm.train.generation.direct.DirectModel.scored_states`): straight from the weights
        where the model allows it (not while sharded: FSDP gathers weights in the forward), else
        by the trunk's forward."""
        sharded = any(type(p).__name__ == "DTensor" for p in lm.parameters())
        runner = None if sharded else direct_model_or_reason(lm, training=torch.is_grad_enabled())
        if isinstance(runner, DirectModel):
            return runner.scored_states(input_ids, attention_mask, scored)
        first = first_scored_column(scored)
        inputs, attention = input_ids[:, :-1], attention_mask[:, :-1]  # position t predicts token t + 1
        trunk = getattr(lm, lm.base_model_prefix)
        hidden = trunk(
            input_ids=inputs,
            attention_mask=attention,
            position_ids=position_ids_from_mask(attention),
            use_cache=False,
        ).last_hidden_state  # [B, T - 1, H]
        return hidden[:, first - 1 :], first

    def save_pretrained(
        self, directory: str | os.PathLike[str], state_dict: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """The policy with ``save_pretrained`` (``state_dict``, if given, is this module's full one,
        as FSDP gathers it) and the head in :data:`VALUE_HEAD_FILE` beside it."""
        from safetensors.torch import save_file

        policy_state = head_state = None
        if state_dict is not None:
            policy_state = {
                k.removeprefix("policy."): v for k, v in state_dict.items() if k.startswith("policy.")
            }
            head_state = {
                k.removeprefix("value_head."): v for k, v in state_dict.items() if k.startswith("value_head.")
            }
        if policy_state is not None:
            self.policy.save_pretrained(directory, state_dict=policy_state, **kwargs)
        else:
            self.policy.save_pretrained(directory, **kwargs)
        head = head_state if head_state is not None else self.value_head.state_dict()
        save_file(
            {k: v.detach().cpu().contiguous() for k, v in head.items()},
            str(Path(directory) / VALUE_HEAD_FILE),
        )


def load_policy_with_value_head(directory: str | os.PathLike[str], **kwargs: Any) -> PolicyWithValueHead:
    """A :class:`PolicyWithValueHead` saved by its ``save_pretrained``; ``kwargs`` go to
    ``AutoModelForCausalLM.from_pretrained``."""
    from safetensors.torch import load_file

    path = Path(directory)
    if not (path / VALUE_HEAD_FILE).is_file():
        raise FileNotFoundError(
            f"{path} holds no {VALUE_HEAD_FILE}: it is not a policy saved with a value head"
        )
    model = PolicyWithValueHead(AutoModelForCausalLM.from_pretrained(path, **kwargs))
    model.value_head.load_state_dict(load_file(str(path / VALUE_HEAD_FILE)))
    return model


def causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The causal LM that samples for ``model``: its :attr:`~PolicyWithValueHead.policy` when it
    carries a value head, else ``model`` itself."""
    return model.policy if isinstance(model, PolicyWithValueHead) else model
