"""The SFT loss: shifted cross-entropy on target tokens, and exact gradient accumulation."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import torch

from mrlm.train.sft import SFTExample, collate_padded, sft_loss
from mrlm.train.tiny import build_tiny_model


def test_hand_computed_on_three_tokens() -> None:
    # Position 0 predicts token 2 from uniform logits: -log(1/3). Position 1 predicts token 1 with
    # probabilities (1/4, 1/2, 1/4): -log(1/2). Position 2 predicts nothing.
    logits = torch.tensor([[[0.0, 0.0, 0.0], [0.0, math.log(2.0), 0.0], [5.0, 0.0, 0.0]]])
    input_ids = torch.tensor([[0, 2, 1]])
    loss, stats = sft_loss(logits, input_ids, torch.tensor([[1.0, 1.0, 1.0]]))
    assert loss.item() == pytest.approx((math.log(3.0) + math.log(2.0)) / 2, abs=1e-6)
    # The mask marks targets: the first token's flag never counts; argmax 0 misses 2, argmax 1 hits 1.
    assert stats.tokens == 2 and stats.correct == 1 and stats.accuracy == 0.5
    only_last, stats = sft_loss(logits, input_ids, torch.tensor([[0.0, 0.0, 1.0]]))
    assert only_last.item() == pytest.approx(math.log(2.0), abs=1e-6) and stats.accuracy == 1.0
    scaled, _ = sft_loss(logits, input_ids, torch.tensor([[0, 1, 1]]), num_tokens=4.0)
    assert scaled.item() == pytest.approx((math.log(3.0) + math.log(2.0)) / 4, abs=1e-6)


def test_no_targets_give_zero_and_bad_inputs_are_refused() -> None:
    logits = torch.zeros(1, 3, 3, requires_grad=True)
    loss, stats = sft_loss(logits, torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3))
    assert loss.item() == 0.0 and stats.tokens == 0 and stats.accuracy == 0.0
    loss.backward()  # still differentiable
    with pytest.raises(ValueError, match="shapes disagree"):
        sft_loss(logits, torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="num_tokens must be positive"):
        sft_loss(logits, torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 3), num_tokens=0.0)


def _batch(tokenizer: Any, lengths: list[int]) -> Any:
    generator = random.Random(0)
    examples = [
        SFTExample(
            [generator.randrange(3, len(tokenizer)) for _ in range(n)],
            [generator.randrange(2) for _ in range(n)],
        )
        for n in lengths
    ]
    return collate_padded(examples, tokenizer.pad_token_id)


def test_matches_cross_entropy_with_ignore_index_on_the_tiny_model(tokenizer: Any, model: Any) -> None:
    batch = _batch(tokenizer, [12, 7, 20])
    with torch.no_grad():
        logits = model(**batch.model_inputs()).logits
    labels = batch.input_ids.masked_fill(batch.labels_mask == 0, -100)
    expected = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
    )
    loss, stats = sft_loss(logits, batch.input_ids, batch.labels_mask)
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=1e-6)
    assert stats.tokens == batch.num_targets == (labels[:, 1:] != -100).sum().item()
    hits = (logits[:, :-1].argmax(-1) == labels[:, 1:]).sum().item()
    assert stats.accuracy == pytest.approx(hits / stats.tokens)
    assert stats.nll_sum == pytest.approx(expected.item() * stats.tokens, rel=1e-5)


def test_micro_batch_losses_sum_to_the_full_batch_loss(tokenizer: Any) -> None:
    model = build_tiny_model(tokenizer)
    batch = _batch(tokenizer, [12, 7, 20, 3])

    full, _ = sft_loss(model(**batch.model_inputs()).logits, batch.input_ids, batch.labels_mask)
    full.backward()
    full_grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()

    total = torch.zeros(())
    for rows in ([0], [1, 2, 3]):  # uneven split: a per-micro-batch mean would weight tokens unequally
        part = collate_padded(
            [
                SFTExample(
                    batch.input_ids[r, : batch.seq_lens[r][0]].tolist(),
                    batch.labels_mask[r, : batch.seq_lens[r][0]].int().tolist(),
                )
                for r in rows
            ],
            tokenizer.pad_token_id,
        )
        loss, _ = sft_loss(
            model(**part.model_inputs()).logits,
            part.input_ids,
            part.labels_mask,
            num_tokens=batch.num_targets,
        )
        loss.backward()
        total = total + loss.detach()
    torch.testing.assert_close(total, full.detach(), rtol=1e-6, atol=1e-6)
    accumulated = [p.grad for p in model.parameters() if p.grad is not None]
    for got, want in zip(accumulated, full_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)
