"""Credit and the multi-agent baselines, against examples worked by hand: two agents, groups of 3,
joint actions aligned and crossed."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.algorithms import magrpo, mareinforce, maremax, marloo
from mrlm.train.algorithms.multi_agent import credited_rewards
from mrlm.train.generation import SamplingParams
from mrlm.train.ops.advantages import group_relative_advantages
from mrlm.train.ops.credit import grouped_advantages, team_rewards, token_advantages, turn_advantages
from mrlm.train.rollout import RolloutEngine, Trajectory
from tests.train.rollout.scripted_multi import Coordinate, DigitGenerator

EPS = 1e-4
# Each variant's advantages, unscaled, for a group whose rewards are c + (0, 0.1, 0.2), worked by hand:
#   mean 1.1 (c = 1)      -> r - mean        = (-0.1, 0, 0.1)
#   no baseline           -> r               = c + (0, 0.1, 0.2)
#   leave one out         -> r_i - mean_{j!=i} = (0 - 0.15, 0.1 - 0.1, 0.2 - 0.05) = (-0.15, 0, 0.15)
#   max                   -> r - max         = (-0.2, -0.1, 0)
BY_HAND: dict[str, Any] = {
    "magrpo": lambda c: [-0.1, 0.0, 0.1],
    "mareinforce": lambda c: [c, c + 0.1, c + 0.2],
    "marloo": lambda c: [-0.15, 0.0, 0.15],
    "maremax": lambda c: [-0.2, -0.1, 0.0],
}
ESTIMATORS = {
    "magrpo": magrpo.advantages,
    "mareinforce": mareinforce.advantages,
    "marloo": marloo.advantages,
    "maremax": maremax.advantages,
}


def _rows(tokenizer: Any, joint: str) -> list[Trajectory]:
    """Coordinate, two agents, one task, groups of 3; sample j of each agent says the digit j."""
    engine = RolloutEngine(
        lambda: Coordinate(num_agents=2),
        DigitGenerator(tokenizer),
        tokenizer,
        SamplingParams(max_new_tokens=4),
        joint=joint,  # type: ignore[arg-type]
    )
    with engine:
        return engine.collect([7], group_size=3)


# Coordinate pays each agent 1 when both name the same digit, plus a tenth of its own digit.
#   align: joint episode j has both agents say j: every row earns 1 + 0.1 j.
#   cross: sample i of an agent meets each of the partner's 3 samples once and matches one of them:
#          its credit is the mean (1 + 0.1 i + 2 * 0.1 i) / 3 = 1/3 + 0.1 i.
CREDIT_BASE = {"align": 1.0, "cross": 1.0 / 3.0}


@pytest.mark.parametrize("joint", ["align", "cross"])
@pytest.mark.parametrize("variant", sorted(ESTIMATORS))
@pytest.mark.parametrize("scale", ["none", "group"])
def test_each_baseline_and_joint_mode_matches_the_hand_worked_example(
    tokenizer: Any, joint: str, variant: str, scale: str
) -> None:
    rows = _rows(tokenizer, joint)
    assert [(row.agent, row.sample) for row in rows] == [
        ("p0", 0),
        ("p0", 1),
        ("p0", 2),
        ("p1", 0),
        ("p1", 1),
        ("p1", 2),
    ]
    base = CREDIT_BASE[joint]
    rewards = credited_rewards(rows, "agent")
    torch.testing.assert_close(
        rewards, torch.tensor([base, base + 0.1, base + 0.2] * 2), rtol=1e-6, atol=1e-6
    )
    groups = torch.tensor([row.group for row in rows])
    advantages = grouped_advantages(rewards, groups, ESTIMATORS[variant], scale=scale)  # type: ignore[arg-type]
    expected = torch.tensor(BY_HAND[variant](base) * 2)
    if scale == "group":
        expected = expected / (0.1 + EPS)  # each group's rewards have std 0.1
    torch.testing.assert_close(advantages, expected, rtol=1e-5, atol=1e-5)


def test_team_credit_is_the_mean_of_the_episode_rows(tokenizer: Any) -> None:
    """Aligned episodes: both agents earn the same in Coordinate, so the team's reward is theirs."""
    rows = _rows(tokenizer, "align")
    torch.testing.assert_close(credited_rewards(rows, "team"), credited_rewards(rows, "agent"))
    assert len({row.episode for row in rows}) == 3


def test_team_rewards_by_hand() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.5, 0.5, 0.0, 0.2, 3.0])
    episodes = torch.tensor([4, 4, 9, 9, 2, 2, 5])
    expected = torch.tensor([0.5, 0.5, 0.5, 0.5, 0.1, 0.1, 3.0])
    torch.testing.assert_close(team_rewards(rewards, episodes), expected)


def test_team_rewards_need_one_episode_per_row() -> None:
    with pytest.raises(ValueError, match="must both be"):
        team_rewards(torch.ones(3), torch.zeros(2))


def test_groups_need_not_be_contiguous_and_a_lone_row_gets_zero() -> None:
    rewards = torch.tensor([1.0, 5.0, 3.0, 7.0, 2.0])
    groups = torch.tensor([0, 1, 0, 1, 2])
    advantages = grouped_advantages(rewards, groups, magrpo.advantages, scale="none")
    torch.testing.assert_close(advantages, torch.tensor([-1.0, -1.0, 1.0, 1.0, 0.0]))


def test_batch_scaling_divides_by_the_std_of_every_reward() -> None:
    rewards = torch.tensor([1.0, 5.0, 3.0, 7.0])
    groups = torch.tensor([0, 0, 1, 1])
    advantages = grouped_advantages(rewards, groups, magrpo.advantages, scale="batch")
    std = rewards.std()
    torch.testing.assert_close(advantages, torch.tensor([-2.0, 2.0, -2.0, 2.0]) / (std + EPS))


def test_magrpo_with_group_scaling_is_grpo() -> None:
    """One agent's contiguous groups: MAGRPO's advantages equal GRPO's group-relative ones."""
    rewards = torch.tensor([0.0, 1.0, 1.0, 0.3, 0.2, 0.9, 0.9, 0.9])
    groups = torch.arange(8) // 4
    torch.testing.assert_close(
        grouped_advantages(rewards, groups, magrpo.advantages, scale="group"),
        group_relative_advantages(rewards, 4, scale="group"),
    )


def test_bad_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        grouped_advantages(torch.ones(2), torch.zeros(2), magrpo.advantages, scale="std")  # type: ignore[arg-type]


def test_turn_advantages_compare_each_turn_within_its_group_by_hand() -> None:
    """Two rows of group 0 with two turns, one of them with three; a lone row of group 1."""
    turn_rewards = [[1.0, 0.0], [0.0, 1.0, 5.0], [2.0]]
    advantages = turn_advantages(turn_rewards, [0, 0, 1], magrpo.advantages, scale="none")
    # turn 1 of group 0: rewards (1, 0), mean 0.5; turn 2: (0, 1), mean 0.5; turn 3 only in row 1: 0.
    assert advantages == [[0.5, -0.5], [-0.5, 0.5, 0.0], [0.0]]


def test_token_advantages_put_each_turn_on_its_reply() -> None:
    out = token_advantages([[0.5, -1.0], [2.0]], [[(1, 3), (5, 6)], [(0, 2)]], width=7)
    expected = torch.tensor([[0, 0.5, 0.5, 0, 0, -1.0, 0], [2.0, 2.0, 0, 0, 0, 0, 0]])
    torch.testing.assert_close(out, expected)
    with pytest.raises(ValueError, match="turn values"):
        token_advantages([[1.0]], [[(0, 1), (2, 3)]], width=4)


def test_team_credit_per_turn_is_the_episode_mean_of_that_turn(tokenizer: Any) -> None:
    from mrlm.train.algorithms.multi_agent import credited_turn_rewards

    rows = _rows(tokenizer, "align")
    rows[0].turn_rewards = [3.0]  # p0's row of episode e; p1's row of the same episode earns 1.0
    partner = next(row for row in rows if row.agent == "p1" and row.episode == rows[0].episode)
    assert credited_turn_rewards(rows, "team")[0] == [pytest.approx((3.0 + partner.turn_rewards[0]) / 2)]
    assert credited_turn_rewards(rows, "agent")[0] == [3.0]
