"""The shared setting checks: the first setting out of range is named alone, with its value."""

from __future__ import annotations

import pytest

from mrlm.train.setting_checks import check_counts, check_non_negative, check_positive


def test_the_first_count_below_one_is_named_with_its_value() -> None:
    check_counts(steps=1, batch_size=64)
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1, got 0$"):
        check_counts(steps=3, batch_size=0, passes=-1)
    with pytest.raises(ValueError, match=r"^passes must be at least 1, got -1$"):
        check_counts(steps=3, batch_size=2, passes=-1)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.5])
def test_a_coefficient_that_is_not_a_finite_number_at_least_zero_is_named(value: float) -> None:
    check_non_negative(vf_coef=0.0, kl_coef=0.1)
    with pytest.raises(ValueError, match=rf"^kl_coef must be a finite number >= 0, got {value}$"):
        check_non_negative(vf_coef=0.5, kl_coef=value)


def test_a_setting_that_must_be_positive_refuses_zero_and_infinity() -> None:
    check_positive(beta=0.1)
    for value in (0.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match=rf"^beta must be a finite number > 0, got {value}$"):
            check_positive(beta=value)
