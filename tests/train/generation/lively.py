"""A tiny model whose replies vary, for generation and rollout tests.

The tiny model's default initialisation (std 0.02) makes it repeat one token forever; redrawing the
weight matrices with a larger spread gives varied replies, different lengths and occasional stop
tokens, which exercises padding, stopping and row removal. Deterministic: it depends only on ``seed``.
"""

from __future__ import annotations

from typing import Any

import torch

from mrlm.train.tiny import build_tiny_model


def build_lively_model(tokenizer: Any, *, seed: int = 0, std: float = 0.3, **kwargs: Any) -> Any:
    model = build_tiny_model(tokenizer, seed=seed, **kwargs)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for parameter in model.parameters():
            if parameter.dim() > 1:  # weight matrices and embeddings; norms keep their ones
                parameter.normal_(0.0, std)
    return model
