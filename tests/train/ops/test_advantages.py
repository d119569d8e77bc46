"""Group-relative advantages against values worked out by hand and a naive loop."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.ops.advantages import group_relative_advantages, groups_with_signal

REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])


def test_group_scaling_by_hand() -> None:
    # Group 1: mean 0.5, sample std sqrt((4 * 0.25) / 3) = 0.577350; A = +-0.5 / 0.577350 = +-0.866025.
    # Group 2: all equal, A = 0 / (0 + eps) = 0.
    adv = group_relative_advantages(REWARDS, 4, scale="group", eps=0.0 + 1e-12)
    expected = torch.tensor([0.866025, -0.866025, -0.866025, 0.866025, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(adv, expected, atol=1e-6, rtol=0)


def test_batch_scaling_by_hand() -> None:
    # Batch std: mean 1.25, squared deviations sum 5.5, / 7 -> 0.785714, sqrt -> 0.886405.
    adv = group_relative_advantages(REWARDS, 4, scale="batch", eps=0.0)
    torch.testing.assert_close(adv[:4], torch.tensor([1, -1, -1, 1.0]) * 0.5 / 0.886405, atol=1e-6, rtol=0)
    assert torch.all(adv[4:] == 0)


def test_no_scaling_is_mean_centred() -> None:
    adv = group_relative_advantages(REWARDS, 4, scale="none")
    torch.testing.assert_close(adv, torch.tensor([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]))


def test_matches_a_naive_loop() -> None:
    rewards = torch.rand(24, generator=torch.Generator().manual_seed(0))
    adv = group_relative_advantages(rewards, 6, eps=1e-4)
    for g in range(4):
        group = rewards[6 * g : 6 * (g + 1)].tolist()
        mean = sum(group) / 6
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / 5)
        for i, r in enumerate(group):
            assert adv[6 * g + i].item() == pytest.approx((r - mean) / (std + 1e-4), abs=1e-5)


def test_groups_with_signal() -> None:
    assert groups_with_signal(REWARDS, 4).tolist() == [True, False]


@pytest.mark.parametrize(
    ("rewards", "group"), [(torch.zeros(6), 4), (torch.zeros(4), 1), (torch.zeros(2, 2), 2)]
)
def test_shape_errors(rewards: torch.Tensor, group: int) -> None:
    with pytest.raises(ValueError, match=r"rewards|groups"):
        group_relative_advantages(rewards, group)


def test_unknown_scale() -> None:
    with pytest.raises(ValueError, match="scale"):
        group_relative_advantages(REWARDS, 4, scale="global")  # type: ignore[arg-type]
