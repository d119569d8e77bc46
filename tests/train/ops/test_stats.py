"""Masked statistics against values worked out by hand and against torch on the selected entries."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.ops.stats import masked_mean, masked_sum, masked_var, masked_whiten

# Masked entries: row 0 -> 1, 2, 3; row 1 -> 10; row 2 -> none. Unmasked entries are junk.
VALUES = torch.tensor([[1.0, 2.0, 3.0, float("nan")], [10.0, 100.0, float("inf"), 7.0], [5.0, 5.0, 5.0, 5.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.float32)


def close(actual: torch.Tensor, expected: object) -> None:
    torch.testing.assert_close(
        actual, torch.as_tensor(expected, dtype=actual.dtype), rtol=1e-5, atol=1e-6, equal_nan=True
    )


def test_sum_and_mean_by_hand() -> None:
    close(masked_sum(VALUES, MASK), 16.0)
    close(masked_sum(VALUES, MASK, dim=1), [6.0, 10.0, 0.0])
    close(masked_sum(VALUES, MASK, dim=0), [11.0, 2.0, 3.0, 0.0])
    close(masked_mean(VALUES, MASK), 4.0)
    close(masked_mean(VALUES, MASK, dim=1), [2.0, 10.0, math.nan])  # empty row -> NaN
    close(masked_mean(VALUES, MASK.bool(), dim=0), [5.5, 2.0, 3.0, math.nan])


def test_var_by_hand() -> None:
    # All four masked entries 1, 2, 3, 10: mean 4, squared deviations 9 + 4 + 1 + 36 = 50.
    close(masked_var(VALUES, MASK), 50.0 / 3)
    close(masked_var(VALUES, MASK, unbiased=False), 50.0 / 4)
    # Per row: 1, 2, 3 -> 2 / 2 = 1 (unbiased) or 2 / 3; a single entry -> NaN unbiased, 0 biased.
    close(masked_var(VALUES, MASK, dim=1), [1.0, math.nan, math.nan])
    close(masked_var(VALUES, MASK, dim=1, unbiased=False), [2.0 / 3, 0.0, math.nan])


def test_var_matches_torch_on_the_selected_entries() -> None:
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(5, 9, generator=generator, dtype=torch.float64)
    mask = torch.rand(5, 9, generator=generator) > 0.4
    mask[:, :2] = True
    close(masked_var(values, mask), values[mask].var())
    close(masked_var(values, mask, unbiased=False), values[mask].var(unbiased=False))
    close(masked_mean(values, mask), values[mask].mean())
    close(masked_var(values, mask, dim=1), torch.stack([values[b][mask[b]].var() for b in range(5)]))
    close(masked_mean(values, mask, dim=1), torch.stack([values[b][mask[b]].mean() for b in range(5)]))


def test_gradients_ignore_junk_outside_the_mask() -> None:
    values = VALUES[:2].clone().requires_grad_(True)
    masked_var(values, MASK[:2]).backward()
    assert values.grad is not None and torch.isfinite(values.grad).all()
    assert torch.all(values.grad[MASK[:2] == 0] == 0)


def test_whiten_gives_mean_zero_std_one() -> None:
    generator = torch.Generator().manual_seed(1)
    values = torch.randn(4, 10, generator=generator) * 3.0 + 5.0
    mask = (torch.rand(4, 10, generator=generator) > 0.3).float()
    values[mask == 0] = float("nan")  # never looked at
    out = masked_whiten(values, mask)
    close(masked_mean(out, mask), 0.0)
    close(masked_var(out, mask).sqrt(), 1.0)
    assert torch.all(out[mask == 0] == 0)
    # Masked entries keep their order: it is an increasing affine map of them.
    selected = values[mask.bool()]
    std = selected.std()
    close(out[mask.bool()], (selected - selected.mean()) / std)


def test_whiten_without_shift_keeps_the_mean() -> None:
    values = torch.tensor([[2.0, 4.0, 6.0, 99.0], [8.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    # Masked 2, 4, 6, 8: mean 5, unbiased var 20 / 3.
    out = masked_whiten(values, mask, shift_mean=False, eps=0.0)
    scale = math.sqrt(3.0 / 20.0)
    close(out, [[5 - 3 * scale, 5 - scale, 5 + scale, 0.0], [5 + 3 * scale, 0.0, 0.0, 0.0]])
    close(masked_mean(out, mask), 5.0)
    close(masked_var(out, mask), 1.0)


def test_whiten_equal_values_give_zero() -> None:
    out = masked_whiten(torch.full((2, 3), 4.0), torch.ones(2, 3))
    assert torch.all(out == 0)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="shape"):
        masked_mean(torch.ones(2, 3), torch.ones(3, 2))
    with pytest.raises(ValueError, match="shape"):
        masked_sum(torch.ones(2, 3), torch.ones(3))
    with pytest.raises(ValueError, match="floating"):
        masked_var(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3))
    with pytest.raises(ValueError, match="at least 2 masked entries, got 1"):
        masked_whiten(VALUES, torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="eps"):
        masked_whiten(VALUES, MASK, eps=-1.0)
