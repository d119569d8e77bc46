"""Value models (critics): a causal LM's backbone with a scalar head, one value per token.

The class is transformers' ``AutoModelForTokenClassification`` with ``num_labels=1`` (for a Qwen2
policy, ``Qwen2ForTokenClassification``): a plain transformers class, so a saved critic loads back
with ``AutoModelForTokenClassification.from_pretrained(path)`` and nothing of this project.

Alignment with log-probs: :func:`token_values` returns ``values[:, t]``, the value of the state in
which token ``t`` is generated (the prefix ``tokens[:t]``), read at position ``t - 1`` exactly as
the log-prob of token ``t`` is read from the logits there (see
:func:`~mrlm.train.generation.logprobs.token_logprobs`). Per-token advantages then line up with
per-token log-probs under the same mask.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from transformers import AutoModelForTokenClassification

from mrlm.train.generation.logprobs import position_ids_from_mask
from mrlm.train.policy import TINY, ModelConfig, load_policy


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
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        critic = AutoModelForTokenClassification.from_pretrained(
            config.name_or_path, num_labels=1, classifier_dropout=0.0, dtype=dtype or "auto"
        )
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
