"""Packing: bins, tensors, and packed logits equal to each example's logits alone."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from mrlm.train.sft import SFTBatch, SFTExample, collate_packed, collate_padded, pack_examples
from mrlm.train.sft.packing import PackedAttention
from mrlm.train.tiny import build_tiny_model


def _examples(tokenizer: Any, lengths: list[int], seed: int = 0) -> list[SFTExample]:
    generator = random.Random(seed)
    return [
        SFTExample(
            [generator.randrange(3, len(tokenizer)) for _ in range(n)],
            [generator.randrange(2) for _ in range(n)],
        )
        for n in lengths
    ]


def test_best_fit_fills_the_tightest_bin() -> None:
    # First fit would put the 2 with the 5; best fit puts it where it fills the bin exactly.
    assert pack_examples([5, 6, 2], max_length=8) == [[0], [1, 2]]
    assert pack_examples([5, 3, 4, 2, 6], max_length=8) == [[0, 1], [2, 3], [4]]
    assert pack_examples([], max_length=8) == []
    with pytest.raises(ValueError, match="example 1 has 9 tokens, more than max_length=8"):
        pack_examples([3, 9], max_length=8)


def test_bins_respect_the_limit_and_hold_every_example_once() -> None:
    generator = random.Random(1)
    lengths = [generator.randrange(1, 50) for _ in range(300)]
    bins = pack_examples(lengths, max_length=64)
    assert bins == pack_examples(lengths, max_length=64)
    assert sorted(i for b in bins for i in b) == list(range(300))
    assert all(sum(lengths[i] for i in b) <= 64 for b in bins)
    assert all(b == sorted(b) for b in bins)


def test_collate_packed_lays_out_rows(tokenizer: Any) -> None:
    a, b, c = _examples(tokenizer, [3, 4, 2])
    a = SFTExample(a.input_ids, [1, 1, 1])
    b = SFTExample(b.input_ids, [1, 0, 1, 1])
    batch = collate_packed([[a, b], [c]], pad_token_id=0, attention="position_ids", width=8)
    assert batch.input_ids[0].tolist() == [*a.input_ids, *b.input_ids, 0]
    assert batch.input_ids[1].tolist() == [*c.input_ids, 0, 0, 0, 0, 0, 0]
    # Each example's first token is never a target: nothing of its own precedes it.
    assert batch.labels_mask[0].tolist() == [0, 1, 1, 0, 0, 1, 1, 0]
    assert batch.position_ids.tolist() == [[0, 1, 2, 0, 1, 2, 3, 0], [0, 1, 0, 1, 2, 3, 4, 5]]
    assert batch.seq_lens == ((3, 4), (2,))
    assert batch.cu_seqlens().tolist() == [0, 3, 7, 8, 10, 16]
    assert batch.attention_mask is None and batch.num_targets == 4 + batch.labels_mask[1].sum().item()
    with pytest.raises(ValueError, match="shorter than the longest row"):
        collate_packed([[a, b]], pad_token_id=0, width=6)


def test_block_mask_is_causal_within_examples_only(tokenizer: Any) -> None:
    a, b = _examples(tokenizer, [2, 3])
    mask = collate_packed([[a, b]], pad_token_id=0, width=6).attention_mask
    assert mask is not None and mask.shape == (1, 1, 6, 6) and mask.dtype == torch.float32
    allowed = (mask[0, 0] == 0).int().tolist()
    assert allowed == [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 0],
        [0, 0, 1, 1, 0, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 1],  # padding attends to itself only, so no row is all masked
    ]
    assert mask.min().item() == torch.finfo(torch.float32).min


def _alone(model: Any, examples: list[SFTExample]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [model(input_ids=torch.tensor([e.input_ids])).logits[0] for e in examples]


def _packed_error(
    model: Any, batch: SFTBatch, rows: list[list[SFTExample]], alone: list[torch.Tensor]
) -> float:
    with torch.no_grad():
        logits = model(**batch.model_inputs()).logits
    worst, k = 0.0, 0
    for r, row in enumerate(rows):
        start = 0
        for example in row:
            got = logits[r, start : start + len(example)]
            worst = max(worst, (got - alone[k]).abs().max().item())
            start, k = start + len(example), k + 1
    return worst


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("attention", ["block", "position_ids"])
def test_packed_logits_equal_each_example_alone(
    tokenizer: Any, implementation: str, attention: PackedAttention
) -> None:
    model = build_tiny_model(tokenizer)
    model.set_attn_implementation(implementation)
    examples = _examples(tokenizer, [5, 7, 4, 9, 3, 6])
    rows = [[examples[i] for i in b] for b in pack_examples([len(e) for e in examples], max_length=16)]
    assert any(len(row) > 1 for row in rows)
    batch = collate_packed(rows, tokenizer.pad_token_id, attention=attention)
    assert _packed_error(model, batch, rows, _alone(model, examples)) < 1e-5


def test_packed_examples_see_each_other_without_isolation(tokenizer: Any, model: Any) -> None:
    # Shows the test above can fail: with a cache and no mask, transformers reads no packing.
    examples = _examples(tokenizer, [5, 7])
    batch = collate_packed([examples], tokenizer.pad_token_id, attention="position_ids")
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, position_ids=batch.position_ids, use_cache=True).logits
    alone = _alone(model, examples)
    assert (logits[0, 5:] - alone[1]).abs().max().item() > 1e-3


def test_padded_collate_matches_each_example_alone(tokenizer: Any, model: Any) -> None:
    examples = _examples(tokenizer, [5, 9, 2])
    batch = collate_padded(examples, tokenizer.pad_token_id)
    assert batch.input_ids.shape == (3, 9) and batch.attention_mask is not None
    assert batch.attention_mask.shape == (3, 9) and batch.attention_mask[2].tolist() == [1, 1] + [0] * 7
    assert batch.labels_mask[0].tolist() == [*map(float, examples[0].labels_mask), 0, 0, 0, 0]
    assert batch.cu_seqlens().tolist() == [0, 5, 9, 18, 20, 27]
    assert _packed_error(model, batch, [[e] for e in examples], _alone(model, examples)) < 1e-5
    with pytest.raises(ValueError, match="at least one example"):
        collate_padded([], 0)
