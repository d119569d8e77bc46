"""token_logprobs: alignment, masking, padding side, gradients."""

from __future__ import annotations

from typing import Any

import torch

from mrlm.train.generation import position_ids_from_mask, token_logprobs


def test_position_ids_skip_padding() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0]])
    assert position_ids_from_mask(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 2, 2]]


def test_aligned_with_the_scored_token(lively_model: Any) -> None:
    ids = torch.tensor([[5, 40, 41, 42, 43, 44]])
    mask = torch.tensor([[0, 0, 0, 1, 1, 0]])
    with torch.no_grad():
        logp = token_logprobs(lively_model, ids, torch.ones_like(ids), mask)
        logits = lively_model(input_ids=ids).logits[0]
    expected = torch.log_softmax(logits, -1)
    assert logp[0, [0, 1, 2, 5]].tolist() == [0.0, 0.0, 0.0, 0.0]
    torch.testing.assert_close(logp[0, 3], expected[2, 42])  # token 3 is predicted at position 2
    torch.testing.assert_close(logp[0, 4], expected[3, 43])


def test_left_and_right_padding_agree(lively_model: Any) -> None:
    seqs = [[5, 40, 41, 42, 43], [7, 8, 9]]
    width = 6
    right = torch.tensor([s + [0] * (width - len(s)) for s in seqs])
    right_att = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
    left = torch.tensor([[0] * (width - len(s)) + s for s in seqs])
    left_att = right_att.flip(1)
    right_mask = right_att.clone()
    right_mask[:, 0] = 0
    left_mask = torch.zeros_like(left_att)
    left_mask[0, 2:] = 1
    left_mask[1, 4:] = 1
    with torch.no_grad():
        by_right = token_logprobs(lively_model, right, right_att, right_mask, temperature=0.9)
        by_left = token_logprobs(lively_model, left, left_att, left_mask, temperature=0.9)
    torch.testing.assert_close(by_right[0, 1:5], by_left[0, 2:6], atol=1e-5, rtol=0)
    torch.testing.assert_close(by_right[1, 1:3], by_left[1, 4:6], atol=1e-5, rtol=0)


def test_gradients_flow(tokenizer: Any) -> None:
    from mrlm.train.tiny import build_tiny_model

    model: Any = build_tiny_model(tokenizer)
    ids = torch.tensor([[5, 40, 41, 42]])
    logp = token_logprobs(model, ids, torch.ones_like(ids), torch.tensor([[0, 0, 1, 1]]))
    logp.sum().backward()
    grad = model.get_input_embeddings().weight.grad
    assert grad is not None and bool(grad.abs().sum() > 0)
