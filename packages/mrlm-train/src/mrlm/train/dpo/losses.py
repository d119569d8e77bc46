"""Preference losses: each a pure function of the policy's and the reference's log-ratios.

With ``s_c = log pi(y_c|x) - log pi_ref(y_c|x)`` for the chosen reply and ``s_r`` for the rejected
one (summed over the reply's tokens, or divided by its length when length-normalised), and
``d = s_c - s_r`` the pair's margin, each loss maps a batch of margins to one loss per pair:

* ``sigmoid`` (DPO, Rafailov et al. 2023): ``-log sigmoid(beta d)``;
* ``hinge`` (SLiC, Zhao et al. 2023): ``max(0, 1 - beta d)``;
* ``ipo`` (Azar et al. 2023): ``(d - 1 / (2 beta))^2`` on per-token margins (always length-normalised);
* ``robust`` (cDPO with the bias correction of Chowdhury et al. 2024, for labels flipped with
  probability ``eps``): ``(-(1 - eps) log sigmoid(beta d) + eps log sigmoid(-beta d)) / (1 - 2 eps)``.

The implicit rewards ``beta s_c`` and ``beta s_r`` give the metrics ``rewards/chosen``,
``rewards/rejected``, ``rewards/margins`` and ``rewards/accuracies`` (share of pairs with ``d > 0``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch.nn.functional import logsigmoid

LossType = Literal["sigmoid", "ipo", "hinge", "robust"]


def sigmoid_loss(margin: torch.Tensor, beta: float, label_smoothing: float = 0.0) -> torch.Tensor:
    """DPO: ``-log sigmoid(beta margin)`` per pair (``label_smoothing`` is not used)."""
    return -logsigmoid(beta * margin)


def hinge_loss(margin: torch.Tensor, beta: float, label_smoothing: float = 0.0) -> torch.Tensor:
    """SLiC's hinge: ``relu(1 - beta margin)`` per pair (``label_smoothing`` is not used)."""
    return torch.relu(1 - beta * margin)


def ipo_loss(margin: torch.Tensor, beta: float, label_smoothing: float = 0.0) -> torch.Tensor:
    """IPO: ``(margin - 1 / (2 beta))^2`` per pair, ``margin`` from per-token log-ratios."""
    return (margin - 1 / (2 * beta)) ** 2


def robust_loss(margin: torch.Tensor, beta: float, label_smoothing: float = 0.0) -> torch.Tensor:
    """Robust DPO: the sigmoid loss unbiased for labels flipped with probability ``label_smoothing``."""
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"robust needs 0 <= label_smoothing < 0.5, got {label_smoothing}")
    clean = -(1 - label_smoothing) * logsigmoid(beta * margin)
    flipped = label_smoothing * logsigmoid(-beta * margin)
    return (clean + flipped) / (1 - 2 * label_smoothing)


LOSSES: dict[str, Callable[[torch.Tensor, float, float], torch.Tensor]] = {
    "sigmoid": sigmoid_loss,
    "hinge": hinge_loss,
    "ipo": ipo_loss,
    "robust": robust_loss,
}
#: Losses defined on per-token log-ratios whatever ``length_normalize`` says.
PER_TOKEN_LOSSES = frozenset({"ipo"})


def chosen_nll(chosen_logps: torch.Tensor, chosen_lengths: torch.Tensor) -> torch.Tensor:
    """``[P]`` negative log-likelihood per token of each chosen reply: the SFT term that RPO
    (Pang et al. 2024) adds to DPO's loss with a weight, so the chosen replies stay likely."""
    return -chosen_logps / chosen_lengths.clamp(min=1)


@dataclass(frozen=True)
class PairScores:
    """Per-pair log-ratios of the policy to the reference, and the implicit rewards they give."""

    chosen: torch.Tensor
    """``[P]`` ``s_c``: the chosen reply's log-ratio (per token when length-normalised)."""
    rejected: torch.Tensor
    """``[P]`` ``s_r``: the rejected reply's."""

    @property
    def margin(self) -> torch.Tensor:
        return self.chosen - self.rejected


def pair_scores(
    chosen_logps: torch.Tensor,
    rejected_logps: torch.Tensor,
    ref_chosen_logps: torch.Tensor,
    ref_rejected_logps: torch.Tensor,
    chosen_lengths: torch.Tensor,
    rejected_lengths: torch.Tensor,
    *,
    per_token: bool,
) -> PairScores:
    """The log-ratios ``s_c`` and ``s_r`` of sequence log-probs, divided by each reply's token
    count (at least 1) when ``per_token``."""
    chosen = chosen_logps - ref_chosen_logps
    rejected = rejected_logps - ref_rejected_logps
    if per_token:
        chosen = chosen / chosen_lengths.clamp(min=1)
        rejected = rejected / rejected_lengths.clamp(min=1)
    return PairScores(chosen, rejected)


def preference_loss(
    loss_type: LossType, scores: PairScores, *, beta: float, label_smoothing: float = 0.0
) -> torch.Tensor:
    """``[P]`` loss of each pair under ``loss_type`` (see the module docstring)."""
    try:
        loss = LOSSES[loss_type]
    except KeyError:
        raise ValueError(f"unknown loss_type {loss_type!r}; known: {', '.join(LOSSES)}") from None
    return loss(scores.margin, beta, label_smoothing)
