"""The supervised loss: next-token cross-entropy on the target tokens."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SFTLossStats:
    """Detached statistics of one loss evaluation."""

    tokens: float
    """Target tokens scored."""
    nll_sum: float
    """Summed cross-entropy over them (divide sums over micro-batches for the batch mean)."""
    correct: float
    """Target tokens the argmax of the logits predicts exactly."""

    @property
    def accuracy(self) -> float:
        """Share of target tokens predicted exactly by argmax (0 when there are none)."""
        return self.correct / self.tokens if self.tokens else 0.0


def sft_loss(
    logits: torch.Tensor,
    input_ids: torch.Tensor,
    labels_mask: torch.Tensor,
    *,
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, SFTLossStats]:
    """Cross-entropy of the target tokens, summed and divided by ``num_tokens``.

    The mask marks *targets*: token ``t`` with ``labels_mask[:, t] == 1`` is scored as predicted by
    ``logits[:, t - 1]``, so ``labels_mask[:, 0]`` never counts. Computed in float32 whatever the
    logits' dtype.

    Args:
        logits: ``[B, T, V]`` the model's outputs.
        input_ids: ``[B, T]`` the tokens the model read.
        labels_mask: ``[B, T]`` 1 on target tokens, 0 elsewhere.
        num_tokens: the normaliser. None: this batch's target count (a per-token mean). For
            gradient accumulation pass the target count of the whole batch (all micro-batches, all
            ranks): the micro-batch losses then sum to the full-batch mean exactly, however the
            targets are spread across them.

    Returns:
        The scalar loss (0 with no targets and no ``num_tokens``) and detached statistics.
    """
    if logits.shape[:2] != input_ids.shape or input_ids.shape != labels_mask.shape:
        raise ValueError(
            f"shapes disagree: logits {tuple(logits.shape)}, input_ids {tuple(input_ids.shape)}, "
            f"labels_mask {tuple(labels_mask.shape)}"
        )
    predictions = logits[:, :-1].float()
    targets = input_ids[:, 1:]
    weights = labels_mask[:, 1:].to(predictions.dtype)
    nll = torch.nn.functional.cross_entropy(
        predictions.reshape(-1, predictions.shape[-1]), targets.reshape(-1), reduction="none"
    )
    nll_sum = (nll.view_as(weights) * weights).sum()
    tokens = weights.sum()
    if num_tokens is None:
        # clamp: a batch without targets gives 0, not NaN.
        loss = nll_sum / tokens.clamp(min=1.0)
    elif num_tokens > 0:
        loss = nll_sum / num_tokens
    else:
        raise ValueError(f"num_tokens must be positive, got {num_tokens}")
    with torch.no_grad():
        correct = ((predictions.argmax(dim=-1) == targets).to(weights.dtype) * weights).sum()
    stats = SFTLossStats(
        tokens=float(tokens.item()), nll_sum=float(nll_sum.item()), correct=float(correct.item())
    )
    return loss, stats
