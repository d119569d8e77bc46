"""The critic's clipped loss and explained variance against plain-Python arithmetic."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.ops.value_loss import clipped_value_loss, explained_variance


def _by_hand(v: float, old: float, ret: float, clip: float | None) -> float:
    plain = (v - ret) ** 2
    if clip is None:
        return 0.5 * plain
    moved = old + min(max(v - old, -clip), clip)
    return 0.5 * max(plain, (moved - ret) ** 2)


@pytest.mark.parametrize("clip", [0.2, 0.05, None])
def test_clipped_value_loss_matches_the_definition_token_by_token(clip: float | None) -> None:
    values = torch.tensor([[0.0, 0.9, -0.3, 2.0], [0.5, 0.1, 0.7, 0.0]])
    old = torch.tensor([[0.0, 0.5, -0.1, 1.0], [0.45, 0.3, 0.6, 9.0]])
    returns = torch.tensor([[0.0, 1.0, 0.4, 0.5], [0.0, 0.2, 1.5, 0.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    loss, fraction = clipped_value_loss(values, old, returns, mask, clip_range=clip)
    active = 0
    for b in range(2):
        for t in range(4):
            v, o, r = float(values[b, t]), float(old[b, t]), float(returns[b, t])
            expected = _by_hand(v, o, r, clip) if mask[b, t] else 0.0
            assert float(loss[b, t]) == pytest.approx(expected, rel=1e-6, abs=1e-9)
            if mask[b, t] and clip is not None:
                moved = o + min(max(v - o, -clip), clip)
                active += (moved - r) ** 2 > (v - r) ** 2
    assert fraction == pytest.approx(active / 6 if clip is not None else 0.0)


def test_the_value_loss_has_the_gradient_of_the_term_that_wins() -> None:
    values = torch.tensor([[2.0]], requires_grad=True)
    # Moved up by 1.5 from 0.5 towards a return of 3: the clipped value (0.7) is further from the
    # return, so the clipped term wins and, being constant in V beyond the clip, has zero gradient.
    loss, _ = clipped_value_loss(values, torch.tensor([[0.5]]), torch.tensor([[3.0]]), torch.ones(1, 1))
    loss.sum().backward()
    assert values.grad is not None and float(values.grad) == 0.0
    assert float(loss.detach()) == pytest.approx(0.5 * (0.7 - 3.0) ** 2)


def test_a_non_positive_clip_range_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        clipped_value_loss(
            torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1), clip_range=0.0
        )


def test_explained_variance_is_one_for_a_perfect_critic_and_zero_for_the_mean() -> None:
    returns = torch.tensor([[1.0, 2.0, 3.0, 99.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    assert explained_variance(returns, returns, mask) == pytest.approx(1.0)
    assert explained_variance(torch.full_like(returns, 2.0), returns, mask) == pytest.approx(0.0, abs=1e-6)
    residual = [1.0 - 0.5, 2.0 - 2.5, 3.0 - 2.0]
    mean = sum(residual) / 3
    by_hand = 1 - (sum((x - mean) ** 2 for x in residual) / 3) / (2 / 3)
    values = torch.tensor([[0.5, 2.5, 2.0, 0.0]])
    assert explained_variance(values, returns, mask) == pytest.approx(by_hand, rel=1e-6)
    assert math.isnan(explained_variance(returns, torch.ones_like(returns), mask))


def test_explained_variance_is_nan_when_returns_differ_only_by_rounding() -> None:
    from mrlm.train.ops.estimators import gae

    values = torch.randn(4, 12, generator=torch.Generator().manual_seed(0)) * 0.3
    mask = torch.ones(4, 12)
    _, returns = gae(torch.zeros(4, 12), values, mask, gamma=1.0, lam=1.0)  # all 0, up to rounding
    assert math.isnan(explained_variance(values, returns, mask))
