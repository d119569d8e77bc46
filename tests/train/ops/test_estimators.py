"""Advantage estimators against values worked out by hand and against plain Python loops."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from mrlm.train.ops.estimators import (
    batch_normalised_advantages,
    gae,
    group_mean_advantages,
    leave_one_out_advantages,
    max_baseline_advantages,
    no_baseline_advantages,
)

REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 0.0, 4.0])  # two groups of 4


def close(actual: torch.Tensor, expected: object) -> None:
    torch.testing.assert_close(actual, torch.as_tensor(expected, dtype=actual.dtype), rtol=1e-5, atol=1e-6)


# --- sequence-level estimators: by hand ------------------------------------------------------------


def test_group_mean_by_hand() -> None:
    # Group means 0.5 and 2.
    close(group_mean_advantages(REWARDS, 4), [0.5, -0.5, -0.5, 0.5, 0.0, 0.0, -2.0, 2.0])


def test_leave_one_out_by_hand() -> None:
    # Group 1: r=1 vs mean(0, 0, 1) = 1/3 -> 2/3; r=0 vs mean(1, 0, 1) = 2/3 -> -2/3.
    # Group 2: r=2 vs mean(2, 0, 4) = 2 -> 0; r=0 vs mean(2, 2, 4) = 8/3; r=4 vs mean(2, 2, 0) = 4/3.
    third = 1.0 / 3.0
    expected = [2 * third, -2 * third, -2 * third, 2 * third, 0.0, 0.0, -8 * third, 8 * third]
    close(leave_one_out_advantages(REWARDS, 4), expected)
    # ... which is G / (G - 1) times the group-mean advantage.
    close(leave_one_out_advantages(REWARDS, 4), group_mean_advantages(REWARDS, 4) * 4 / 3)


def test_max_baseline_by_hand() -> None:
    # Group maxima 1 and 4: the best answers get 0, the rest are negative.
    close(max_baseline_advantages(REWARDS, 4), [0.0, -1.0, -1.0, 0.0, -2.0, -2.0, -4.0, 0.0])


def test_no_baseline_is_a_copy() -> None:
    rewards = REWARDS.clone()
    adv = no_baseline_advantages(rewards)
    close(adv, REWARDS)
    adv[0] = 100.0
    assert rewards[0].item() == 1.0


def test_batch_normalised_by_hand() -> None:
    # Mean 10 / 8 = 1.25; squared deviations sum to 13.5; sample std sqrt(13.5 / 7) = 1.388730.
    expected = [-0.180021, -0.900103, -0.900103, -0.180021, 0.540062, 0.540062, -0.900103, 1.980226]
    close(batch_normalised_advantages(REWARDS, eps=0.0), expected)


def test_batch_normalised_equal_rewards_give_zero() -> None:
    adv = batch_normalised_advantages(torch.full((5,), 3.0))
    assert torch.all(adv == 0)


# --- sequence-level estimators: against plain loops ------------------------------------------------


def naive_group_mean(rewards: list[float], g: int) -> list[float]:
    out = []
    for start in range(0, len(rewards), g):
        group = rewards[start : start + g]
        mean = sum(group) / g
        out += [r - mean for r in group]
    return out


def naive_leave_one_out(rewards: list[float], g: int) -> list[float]:
    out = []
    for start in range(0, len(rewards), g):
        group = rewards[start : start + g]
        for i, r in enumerate(group):
            others = [x for j, x in enumerate(group) if j != i]
            out.append(r - sum(others) / len(others))
    return out


def naive_max_baseline(rewards: list[float], g: int) -> list[float]:
    out = []
    for start in range(0, len(rewards), g):
        group = rewards[start : start + g]
        out += [r - max(group) for r in group]
    return out


@pytest.mark.parametrize(
    ("estimator", "naive"),
    [
        (group_mean_advantages, naive_group_mean),
        (leave_one_out_advantages, naive_leave_one_out),
        (max_baseline_advantages, naive_max_baseline),
    ],
)
@pytest.mark.parametrize("group_size", [2, 3, 5])
def test_group_estimators_match_naive_loops(
    estimator: Callable[[torch.Tensor, int], torch.Tensor],
    naive: Callable[[list[float], int], list[float]],
    group_size: int,
) -> None:
    rewards = torch.randn(
        4 * group_size, generator=torch.Generator().manual_seed(group_size), dtype=torch.float64
    )
    close(estimator(rewards, group_size), naive(rewards.tolist(), group_size))


def test_batch_normalised_matches_naive_loop() -> None:
    rewards = torch.rand(13, generator=torch.Generator().manual_seed(1))
    values = rewards.tolist()
    mean = sum(values) / len(values)
    std = math.sqrt(sum((r - mean) ** 2 for r in values) / (len(values) - 1))
    close(batch_normalised_advantages(rewards, eps=1e-6), [(r - mean) / (std + 1e-6) for r in values])


# --- sequence-level estimators: bad input ----------------------------------------------------------


@pytest.mark.parametrize(
    "estimator", [group_mean_advantages, leave_one_out_advantages, max_baseline_advantages]
)
@pytest.mark.parametrize(
    ("rewards", "group_size", "message"),
    [
        (torch.zeros(6), 4, "groups of 4"),
        (torch.zeros(4), 1, "need >= 2"),
        (torch.zeros(2, 2), 2, "1-D"),
        (torch.zeros(4, dtype=torch.long), 2, "floating-point"),
    ],
)
def test_group_estimators_reject_bad_input(
    estimator: Callable[[torch.Tensor, int], torch.Tensor],
    rewards: torch.Tensor,
    group_size: int,
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        estimator(rewards, group_size)


def test_batch_estimators_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="1-D"):
        no_baseline_advantages(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="1-D"):
        batch_normalised_advantages(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="at least 2"):
        batch_normalised_advantages(torch.zeros(1))
    with pytest.raises(ValueError, match="eps"):
        batch_normalised_advantages(torch.zeros(3), eps=-1.0)


# --- GAE -------------------------------------------------------------------------------------------

# Row 0: two turns (positions 1-2 and 5) separated by environment text, rewards on each turn's last token.
# Row 1: no generated tokens at all. Values where mask is 0 are junk (9) and must be ignored.
MASK = torch.tensor([[0, 1, 1, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0]], dtype=torch.float32)
TOKEN_REWARDS = torch.tensor([[0, 0, 1.0, 0, 0, 2.0, 0], [0, 0, 0, 0, 0, 0, 0]])
VALUES = torch.tensor([[9, 0.5, 0.4, 9, 9, 0.3, 9], [9, 9, 9, 9, 9, 9, 9.0]])


def test_gae_monte_carlo_by_hand() -> None:
    # gamma = lam = 1: A_t = (sum of rewards from t on) - V(t) over the steps (0, .5), (1, .4), (2, .3).
    adv, ret = gae(TOKEN_REWARDS, VALUES, MASK, gamma=1.0, lam=1.0)
    close(adv, [[0, 3 - 0.5, 3 - 0.4, 0, 0, 2 - 0.3, 0], [0] * 7])
    close(ret, [[0, 3.0, 3.0, 0, 0, 2.0, 0], [0] * 7])


def test_gae_one_step_td_by_hand() -> None:
    # lam = 0, gamma = 0.5: A_t = r_t + 0.5 * V(next step) - V(t); the next step of position 2 is 5.
    adv, ret = gae(TOKEN_REWARDS, VALUES, MASK, gamma=0.5, lam=0.0)
    a0 = 0 + 0.5 * 0.4 - 0.5
    a1 = 1 + 0.5 * 0.3 - 0.4
    a2 = 2 + 0.0 - 0.3
    close(adv, [[0, a0, a1, 0, 0, a2, 0], [0] * 7])
    close(ret, [[0, a0 + 0.5, a1 + 0.4, 0, 0, a2 + 0.3, 0], [0] * 7])


def test_gae_general_by_hand() -> None:
    # gamma = 0.9, lam = 0.5: deltas d2 = 2 - .3, d1 = 1 + .9 * .3 - .4, d0 = .9 * .4 - .5.
    d0, d1, d2 = 0.9 * 0.4 - 0.5, 1 + 0.9 * 0.3 - 0.4, 2 - 0.3
    a2 = d2
    a1 = d1 + 0.45 * a2
    a0 = d0 + 0.45 * a1
    adv, _ = gae(TOKEN_REWARDS, VALUES, MASK.bool(), gamma=0.9, lam=0.5)
    close(adv[0], [0, a0, a1, 0, 0, a2, 0])


def naive_gae(steps: list[tuple[float, float]], gamma: float, lam: float) -> list[float]:
    """GAE over a list of (reward, value) steps with a plain reversed loop."""
    out = [0.0] * len(steps)
    next_value, next_adv = 0.0, 0.0
    for i in reversed(range(len(steps))):
        reward, value = steps[i]
        delta = reward + gamma * next_value - value
        next_adv = delta + gamma * lam * next_adv
        next_value = value
        out[i] = next_adv
    return out


def random_turns(generator: torch.Generator, batch: int, length: int) -> torch.Tensor:
    """``[B, T]`` masks made of several separated spans (turns); the last row has no masked token."""
    mask = torch.zeros(batch, length)
    for b in range(batch - 1):
        t = int(torch.randint(0, 3, (1,), generator=generator))
        while t < length:
            span = int(torch.randint(1, 5, (1,), generator=generator))
            mask[b, t : t + span] = 1.0
            t += span + int(torch.randint(1, 4, (1,), generator=generator))
    return mask


@pytest.mark.parametrize(
    ("gamma", "lam"), [(1.0, 1.0), (1.0, 0.0), (0.99, 0.95), (0.5, 0.3), (1.0, 0.9), (0.0, 0.7)]
)
def test_gae_matches_a_loop_over_masked_steps(gamma: float, lam: float) -> None:
    generator = torch.Generator().manual_seed(7)
    mask = random_turns(generator, batch=6, length=20)
    assert any(((mask[b, 1:] - mask[b, :-1]) == 1).any() for b in range(5)), "want rows with several turns"
    rewards = torch.randn(6, 20, generator=generator, dtype=torch.float64) * mask
    values = torch.randn(6, 20, generator=generator, dtype=torch.float64)
    adv, ret = gae(rewards, values, mask, gamma=gamma, lam=lam)

    for b in range(6):
        positions = mask[b].nonzero().flatten().tolist()
        steps = [(rewards[b, t].item(), values[b, t].item()) for t in positions]
        expected = torch.zeros(20, dtype=torch.float64)
        expected[positions] = torch.tensor(naive_gae(steps, gamma, lam), dtype=torch.float64)
        close(adv[b], expected)
        close(ret[b], (expected + values[b]) * mask[b])
        if gamma == 1.0 and lam == 1.0:  # Monte Carlo: future rewards minus the value
            future = [sum(r for r, _ in steps[i:]) - v for i, (_, v) in enumerate(steps)]
            close(adv[b, positions], future)
        if lam == 0.0:  # one-step TD error
            next_values = [v for _, v in steps[1:]] + ([0.0] if steps else [])
            td = [r + gamma * nv - v for (r, v), nv in zip(steps, next_values, strict=True)]
            close(adv[b, positions], td)
    assert torch.all(adv[5] == 0) and torch.all(ret[5] == 0)


def test_gae_ignores_values_outside_the_mask() -> None:
    junk = VALUES.clone()
    junk[MASK == 0] = float("nan")
    adv, ret = gae(TOKEN_REWARDS, junk, MASK, gamma=0.9, lam=0.8)
    expected_adv, expected_ret = gae(TOKEN_REWARDS, VALUES, MASK, gamma=0.9, lam=0.8)
    close(adv, expected_adv)
    close(ret, expected_ret)


def test_gae_outputs_carry_no_gradient() -> None:
    values = VALUES.clone().requires_grad_(True)
    adv, ret = gae(TOKEN_REWARDS, values, MASK, gamma=1.0, lam=1.0)
    assert not adv.requires_grad and not ret.requires_grad


@pytest.mark.parametrize("shape", [(3, 0), (0, 5), (0, 0)])
def test_gae_empty(shape: tuple[int, int]) -> None:
    adv, ret = gae(torch.zeros(shape), torch.zeros(shape), torch.zeros(shape), gamma=1.0, lam=0.95)
    assert adv.shape == shape and ret.shape == shape


def test_gae_rejects_bad_input() -> None:
    ones = torch.ones(2, 3)
    with pytest.raises(ValueError, match="2-D"):
        gae(torch.ones(3), torch.ones(3), torch.ones(3), gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="same"):
        gae(ones, torch.ones(2, 4), ones, gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="same"):
        gae(ones, ones, torch.ones(3, 2), gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="gamma"):
        gae(ones, ones, ones, gamma=1.5, lam=1.0)
    with pytest.raises(ValueError, match="lam"):
        gae(ones, ones, ones, gamma=1.0, lam=-0.1)
    with pytest.raises(ValueError, match="mask"):
        gae(ones, ones, ones * 0.5, gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="floating"):
        gae(ones.long(), ones, ones, gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="rewards must be 0 where mask is 0"):
        gae(TOKEN_REWARDS + (MASK == 0).float() * 0.1, VALUES, MASK, gamma=1.0, lam=1.0)
