"""Per-token rewards for a critic, the entropy bonus and the adaptive KL coefficient, by hand."""

from __future__ import annotations

import math

import pytest
import torch

from mrlm.train.ops.entropy import token_entropy
from mrlm.train.ops.kl import AdaptiveKLController
from mrlm.train.ops.rewards import clip_rewards, kl_penalised_rewards, rewards_on_actions


def test_a_reward_off_the_mask_moves_to_the_last_model_token_before_it() -> None:
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.5, 2.0], [0.0, 0.0, 3.0, 0.0, 0.0, 0.0]])
    moved = rewards_on_actions(rewards, mask)
    # 0.5 sat on env text after the first reply: it rewards that reply's last token.
    assert moved[0].tolist() == [0.0, 0.0, 1.5, 0.0, 0.0, 2.0]
    assert moved[1].tolist() == rewards[1].tolist()  # never acted: nothing to move it to
    assert rewards[0, 4] == 0.5  # the input is left as it was
    same = torch.tensor([[0.0, 1.0]])
    assert rewards_on_actions(same, torch.tensor([[0.0, 1.0]])) is same


def test_the_kl_penalty_is_k1_on_model_tokens() -> None:
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    logp = torch.tensor([[0.0, -1.0, -2.0]])
    ref = torch.tensor([[0.0, -1.5, -1.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0]])
    penalised, kl = kl_penalised_rewards(rewards, logp, ref, mask, 0.1)
    assert kl[0].tolist() == pytest.approx([0.0, 0.5, -1.0])
    assert penalised[0].tolist() == pytest.approx([0.0, -0.05, 1.1])


def test_clip_rewards() -> None:
    assert clip_rewards(torch.tensor([-3.0, 0.5, 9.0]), 1.0).tolist() == [-1.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="positive"):
        clip_rewards(torch.zeros(1), 0.0)


def test_token_entropy_by_hand_at_a_temperature() -> None:
    logits = torch.tensor([[1.0, 2.0, 0.5]])
    for temperature in (1.0, 0.7):
        weights = [math.exp(x / temperature) for x in (1.0, 2.0, 0.5)]
        probs = [w / sum(weights) for w in weights]
        by_hand = -sum(p * math.log(p) for p in probs)
        assert float(token_entropy(logits, temperature)[0]) == pytest.approx(by_hand, rel=1e-6)


def test_the_adaptive_kl_coefficient_follows_ziegler_et_al() -> None:
    control = AdaptiveKLController(0.1, target=6.0, horizon=10_000)
    assert control.update(12.0, 100) == pytest.approx(0.1 * (1 + 0.2 * 100 / 10_000))  # error clipped at 0.2
    before = control.coef
    assert control.update(5.4, 100) == pytest.approx(before * (1 - 0.1 * 100 / 10_000))
    restored = AdaptiveKLController(0.5, target=6.0)
    restored.load_state_dict(control.state_dict())
    assert restored.coef == control.coef
    with pytest.raises(ValueError, match="target"):
        AdaptiveKLController(0.1, target=0.0)
