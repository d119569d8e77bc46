"""check_counts: the first count below 1 is named alone, with its value."""

from __future__ import annotations

import pytest

from mrlm.train.counts import check_counts


def test_the_first_count_below_one_is_named_with_its_value() -> None:
    check_counts(steps=1, batch_size=64)
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1, got 0$"):
        check_counts(steps=3, batch_size=0, passes=-1)
    with pytest.raises(ValueError, match=r"^passes must be at least 1, got -1$"):
        check_counts(steps=3, batch_size=2, passes=-1)
