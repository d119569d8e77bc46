"""pass@k against hand computation and against enumerating every k-subset of the samples."""

from __future__ import annotations

import itertools
import math

import pytest

from mrlm.train.evaluation.passk import mean_pass_at_k, pass_at_k, reported_ks


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        # 5 samples, 2 right, pairs: C(3, 2) = 3 of the C(5, 2) = 10 pairs hold no success -> 1 - 3/10.
        (5, 2, 2, 0.7),
        # 10 samples, 3 right, 5 drawn: C(7, 5) = 21 of C(10, 5) = 252 miss -> 1 - 1/12.
        (10, 3, 5, 11 / 12),
        # pass@1 is the share of successes: 1 of 4.
        (4, 1, 1, 0.25),
        # 4 samples, 3 right, pairs: only one sample failed, so every pair holds a success.
        (4, 3, 2, 1.0),
        # No success: nothing to find.
        (6, 0, 3, 0.0),
        # k = n: any success at all.
        (3, 1, 3, 1.0),
    ],
)
def test_pass_at_k_by_hand(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12, abs=0.0)


def _brute_force(n: int, c: int, k: int) -> float:
    """The share of the k-subsets of n samples (the first c of them successes) that hold a success."""
    samples = [index < c for index in range(n)]
    subsets = list(itertools.combinations(samples, k))
    return sum(any(subset) for subset in subsets) / len(subsets)


def test_pass_at_k_equals_enumerating_every_subset() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(_brute_force(n, c, k), rel=1e-12, abs=1e-15), (
                    n,
                    c,
                    k,
                )


def test_pass_at_1_is_the_success_share_and_pass_at_k_grows_with_k() -> None:
    for n, c in [(7, 3), (20, 1), (16, 15)]:
        assert pass_at_k(n, c, 1) == pytest.approx(c / n, rel=1e-12)
        values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
        assert values == sorted(values)


def test_large_sample_counts_stay_exact() -> None:
    # C(190, 100) / C(200, 100) = prod_{i=0}^{9} (100 - i) / (200 - i), by cancelling factorials.
    expected = 1.0 - math.prod((100 - i) / (200 - i) for i in range(10))
    assert pass_at_k(200, 10, 100) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 2, 0), (4, 2, 5)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="must be in"):
        pass_at_k(n, c, k)


def test_the_mean_over_tasks() -> None:
    # Tasks with 4 samples and 0, 1, 2 successes: pass@2 = 0, 1 - 3/6, 1 - 1/6 -> mean 4/9.
    assert mean_pass_at_k([(4, 0), (4, 1), (4, 2)], 2) == pytest.approx(4 / 9, rel=1e-12)
    with pytest.raises(ValueError, match="at least one task"):
        mean_pass_at_k([], 1)


@pytest.mark.parametrize(
    ("samples", "ks"),
    [
        (1, (1,)),
        (2, (1, 2)),
        (4, (1, 2, 4)),
        (5, (1, 2, 4, 5)),
        (10, (1, 2, 4, 8, 10)),
        (16, (1, 2, 4, 8, 16)),
    ],
)
def test_reported_ks_are_powers_of_two_and_the_sample_count(samples: int, ks: tuple[int, ...]) -> None:
    assert reported_ks(samples) == ks


def test_reported_ks_need_a_sample() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        reported_ks(0)
