"""The preference losses by hand, one pair at a time."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.dpo import pair_scores, preference_loss
from mrlm.train.dpo.losses import hinge_loss, ipo_loss, robust_loss, sigmoid_loss


def _logsigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x))


MARGINS = torch.tensor([2.0, -1.0, 0.0])


def test_sigmoid_by_hand() -> None:
    expected = [-_logsigmoid(0.5 * m) for m in MARGINS.tolist()]
    assert sigmoid_loss(MARGINS, 0.5).tolist() == pytest.approx(expected, rel=1e-6)


def test_hinge_by_hand() -> None:
    # 1 - 0.5 * 2 = 0 (no loss past the margin), 1 + 0.5, 1.
    assert hinge_loss(MARGINS, 0.5).tolist() == pytest.approx([0.0, 1.5, 1.0])


def test_ipo_by_hand() -> None:
    # (m - 1 / (2 * 0.5))^2 = (m - 1)^2
    assert ipo_loss(MARGINS, 0.5).tolist() == pytest.approx([1.0, 4.0, 1.0])


def test_robust_by_hand_and_reduces_to_sigmoid() -> None:
    eps = 0.1
    expected = [
        (-(1 - eps) * _logsigmoid(0.5 * m) + eps * _logsigmoid(-0.5 * m)) / (1 - 2 * eps)
        for m in MARGINS.tolist()
    ]
    assert robust_loss(MARGINS, 0.5, eps).tolist() == pytest.approx(expected, rel=1e-6)
    assert torch.allclose(robust_loss(MARGINS, 0.5, 0.0), sigmoid_loss(MARGINS, 0.5))
    with pytest.raises(ValueError, match="label_smoothing"):
        robust_loss(MARGINS, 0.5, 0.5)


def test_scores_are_log_ratios_optionally_per_token() -> None:
    chosen, rejected = torch.tensor([-3.0]), torch.tensor([-8.0])
    ref_chosen, ref_rejected = torch.tensor([-4.0]), torch.tensor([-6.0])
    lengths_c, lengths_r = torch.tensor([2]), torch.tensor([4])
    summed = pair_scores(chosen, rejected, ref_chosen, ref_rejected, lengths_c, lengths_r, per_token=False)
    assert (summed.chosen.item(), summed.rejected.item(), summed.margin.item()) == (1.0, -2.0, 3.0)
    per_token = pair_scores(chosen, rejected, ref_chosen, ref_rejected, lengths_c, lengths_r, per_token=True)
    assert (per_token.chosen.item(), per_token.rejected.item()) == (0.5, -0.5)
    loss = preference_loss("sigmoid", summed, beta=1.0)
    assert loss.item() == pytest.approx(-_logsigmoid(3.0))
    with pytest.raises(ValueError, match="unknown loss_type"):
        preference_loss("kto", summed, beta=1.0)  # type: ignore[arg-type]


def test_gradient_raises_chosen_and_lowers_rejected() -> None:
    logps = torch.tensor([-5.0, -5.0], requires_grad=True)
    scores = pair_scores(
        logps[:1], logps[1:], torch.zeros(1), torch.zeros(1), torch.ones(1), torch.ones(1), per_token=False
    )
    preference_loss("sigmoid", scores, beta=0.1).sum().backward()
    assert logps.grad is not None
    assert logps.grad[0] < 0 < logps.grad[1]  # descent raises the chosen log-prob, lowers the rejected


def test_chosen_nll_is_the_per_token_negative_log_likelihood() -> None:
    from mrlm.train.dpo.losses import chosen_nll

    assert chosen_nll(torch.tensor([-6.0, -1.0]), torch.tensor([3, 0])).tolist() == [
        2.0,
        1.0,
    ]  # length 0 counts as 1
