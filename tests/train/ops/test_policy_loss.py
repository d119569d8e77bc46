"""Clipped surrogate, ratios, aggregation and KL against values worked out by hand."""

from __future__ import annotations

import math
import re

import pytest
import torch

from mrlm.train.ops.kl import kl_k3
from mrlm.train.ops.policy_loss import aggregate, check_clip_range, clipped_surrogate, importance_ratio


def test_clipped_surrogate_four_cases_by_hand() -> None:
    ratio = torch.tensor([[1.5, 0.5, 0.5, 1.5]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    mask = torch.ones(1, 4)
    loss, stats = clipped_surrogate(ratio, adv, mask, clip_low=0.2, clip_high=0.2)
    # r=1.5, A=+1: min(1.5, 1.2) = 1.2 (clipped)      -> loss -1.2
    # r=0.5, A=+1: min(0.5, 0.8) = 0.5                 -> loss -0.5
    # r=0.5, A=-1: min(-0.5, -0.8) = -0.8 (clipped)    -> loss  0.8
    # r=1.5, A=-1: min(-1.5, -1.2) = -1.5              -> loss  1.5
    torch.testing.assert_close(loss, torch.tensor([[-1.2, -0.5, 0.8, 1.5]]))
    assert stats.clip_fraction == pytest.approx(0.5)
    assert stats.ratio_mean == pytest.approx(1.0)
    # approx KL: mean of (r - 1) - log r = (0.5 - ln 1.5) and (-0.5 - ln 0.5), two of each.
    expected_kl = ((0.5 - math.log(1.5)) + (-0.5 - math.log(0.5))) / 2
    assert stats.approx_kl == pytest.approx(expected_kl, rel=1e-6)


def test_clip_higher_is_asymmetric() -> None:
    ratio = torch.tensor([[1.25, 0.75]])
    loss, _ = clipped_surrogate(ratio, torch.tensor([1.0]), torch.ones(1, 2), clip_low=0.2, clip_high=0.28)
    # 1.25 < 1.28 stays unclipped; 0.75 < 0.8 is clipped up to 0.8 but min keeps 0.75.
    torch.testing.assert_close(loss, torch.tensor([[-1.25, -0.75]]))


def test_mask_zeroes_losses_and_sequence_advantage_broadcasts() -> None:
    ratio = torch.ones(2, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    loss, stats = clipped_surrogate(ratio, torch.tensor([2.0, -3.0]), mask)
    torch.testing.assert_close(loss, torch.tensor([[-2.0, -2.0, 0.0], [3.0, 0.0, 0.0]]))
    assert stats.clip_fraction == 0.0


def test_token_and_sequence_ratios_by_hand() -> None:
    old = torch.zeros(1, 3)
    logp = torch.tensor([[math.log(2.0), math.log(8.0), 5.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    token = importance_ratio(logp, old, mask, "token")
    torch.testing.assert_close(token, torch.tensor([[2.0, 8.0, 1.0]]))  # masked token: exp(0)
    sequence = importance_ratio(logp, old, mask, "sequence")
    # Geometric mean of 2 and 8 is 4, for every token of the sequence.
    torch.testing.assert_close(sequence, torch.full((1, 3), 4.0))
    # d ratio / d logp_t = ratio / |y| = 2 on each of the two real tokens, 0 on the masked one.
    (sequence[0, 0]).backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[2.0, 2.0, 0.0]]))


def test_aggregations_by_hand() -> None:
    token_loss = torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert aggregate(token_loss, mask, "sequence_mean").item() == pytest.approx((1.5 + 3.0) / 2)
    assert aggregate(token_loss, mask, "token_mean").item() == pytest.approx(6.0 / 3)
    assert aggregate(token_loss, mask, "constant", max_length=4).item() == pytest.approx(6.0 / 8)
    with pytest.raises(ValueError, match="max_length"):
        aggregate(token_loss, mask, "constant")
    with pytest.raises(ValueError, match="aggregation"):
        aggregate(token_loss, mask, "sum")  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["sequence_mean", "token_mean", "constant"])
def test_micro_batches_sum_to_the_full_batch(how: str) -> None:
    generator = torch.Generator().manual_seed(0)
    token_loss = torch.randn(6, 5, generator=generator)
    mask = (torch.rand(6, 5, generator=generator) > 0.3).float()
    mask[:, 0] = 1.0
    full = aggregate(token_loss, mask, how, max_length=5)  # type: ignore[arg-type]
    parts = torch.stack(
        [
            aggregate(
                token_loss[i : i + 2],
                mask[i : i + 2],
                how,  # type: ignore[arg-type]
                num_sequences=6,
                num_tokens=float(mask.sum()),
                max_length=5,
            )
            for i in (0, 2, 4)
        ]
    ).sum()
    assert float(parts) == pytest.approx(float(full), rel=1e-6)


def test_kl_k3_by_hand() -> None:
    logp = torch.tensor([math.log(0.5), math.log(0.3)])
    ref = torch.tensor([math.log(0.25), math.log(0.3)])
    # log_ratio = ln(0.25/0.5) = -ln 2: k3 = 0.5 + ln 2 - 1 = 0.193147; equal probabilities give 0.
    torch.testing.assert_close(kl_k3(logp, ref), torch.tensor([0.5 + math.log(2.0) - 1.0, 0.0]))
    assert torch.all(kl_k3(torch.randn(100), torch.randn(100)) >= 0)


@pytest.mark.parametrize(("low", "high"), [(0.0, 0.0), (0.2, 0.28), (0.999, 5.0)])
def test_clip_ranges_that_hold_one_and_stay_positive_are_accepted(low: float, high: float) -> None:
    check_clip_range(low, high)


@pytest.mark.parametrize(
    ("low", "high", "message"),
    [
        (1.0, 0.2, "clip_low must be in [0, 1), got 1.0"),
        (-0.1, 0.2, "clip_low must be in [0, 1), got -0.1"),
        (math.nan, 0.2, "clip_low must be in [0, 1), got nan"),
        (0.2, -0.5, "clip_high must be >= 0, got -0.5"),
        (0.2, math.nan, "clip_high must be >= 0, got nan"),
    ],
)
def test_clip_ranges_out_of_bounds_are_named(low: float, high: float, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_clip_range(low, high)
