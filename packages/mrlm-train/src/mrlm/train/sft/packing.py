"""Packing several short examples into each row, and keeping them from seeing each other.

Packing saves the compute padding wastes. But a causal LM attends to every earlier token of its
row, so unless told otherwise a packed example attends to the examples before it, and its logits
differ from those it would have alone. Ways to keep examples apart:

* ``attention="block"`` (the default here): a ``[B, 1, T, T]`` block-diagonal causal mask, additive
  float (0 = attend, the dtype's minimum = masked), with ``position_ids`` restarting at 0 per
  example. transformers takes a 4-D mask as given for eager and sdpa attention; the float form
  matters: eager attention *adds* the mask to the scores, so a boolean mask would silently add
  1/0 instead of masking. Memory is ``B * T * T`` mask entries.
* ``attention="position_ids"``: no mask, only ``position_ids`` restarting at 0 per example.
  transformers (5.x) then derives the block-diagonal structure itself (and flash-attention varlen
  kernels use the same boundaries), but only when the forward gets no cache: pass
  ``use_cache=False`` (as :meth:`SFTBatch.model_inputs` does), else the examples see each other.

Each example's first token is never a target in a packed row: the shifted loss would score it as a
prediction from the previous example's last token.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Literal

import torch

from mrlm.train.sft.batch import SFTBatch
from mrlm.train.sft.example import SFTExample

PackedAttention = Literal["block", "position_ids"]


def pack_examples(lengths: Sequence[int], max_length: int) -> list[list[int]]:
    """Group examples into bins of at most ``max_length`` tokens, by best fit in input order.

    Each example, in order, goes to the open bin with the least room that still fits it (the
    earliest such bin on ties), or opens a new bin. Deterministic; bins are in order of opening
    and list their examples in input order.

    Args:
        lengths: the length of each example.

    Returns:
        Bins as lists of indices into ``lengths``.

    Raises:
        ValueError: an example is longer than ``max_length`` (truncate first).
    """
    bins: list[list[int]] = []
    # (room left, bin index), sorted: bisect finds the tightest bin that fits.
    rooms: list[tuple[int, int]] = []
    for index, length in enumerate(lengths):
        if length > max_length:
            raise ValueError(f"example {index} has {length} tokens, more than max_length={max_length}")
        slot = bisect.bisect_left(rooms, (length, -1))
        if slot == len(rooms):
            bins.append([index])
            bisect.insort(rooms, (max_length - length, len(bins) - 1))
            continue
        room, chosen = rooms.pop(slot)
        bins[chosen].append(index)
        bisect.insort(rooms, (room - length, chosen))
    return bins


def block_causal_mask(seq_lens: Sequence[Sequence[int]], width: int, dtype: torch.dtype) -> torch.Tensor:
    """``[B, 1, T, T]`` additive mask letting each token attend to earlier tokens of its own example.

    Each row's trailing padding forms one more block, so no query row is fully masked (which would
    turn softmax into NaN on some kernels); the loss ignores padding anyway.
    """
    segments = torch.empty((len(seq_lens), width), dtype=torch.long)
    for row, lengths in enumerate(seq_lens):
        ids = [segment for segment, n in enumerate(lengths) for _ in range(n)]
        segments[row] = torch.tensor(ids + [len(lengths)] * (width - len(ids)), dtype=torch.long)
    same = segments[:, :, None] == segments[:, None, :]
    causal = torch.ones((width, width), dtype=torch.bool).tril()
    allowed = (same & causal).unsqueeze(1)
    mask = torch.zeros(allowed.shape, dtype=dtype)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min)


def collate_packed(
    rows: Sequence[Sequence[SFTExample]],
    pad_token_id: int,
    *,
    attention: PackedAttention = "block",
    dtype: torch.dtype = torch.float32,
    width: int | None = None,
) -> SFTBatch:
    """One row per bin: its examples back to back, then right padding.

    Args:
        rows: the examples of each row (a bin of :func:`pack_examples`).
        pad_token_id: fills the end of each row.
        attention: how packed examples are kept apart (module docstring).
        dtype: the block mask's dtype; use the model's (sdpa wants the query's dtype or bool).
        width: ``T``; defaults to the longest row.

    Returns:
        A batch whose ``position_ids`` restart at 0 with each example and with the padding, and
        whose ``labels_mask`` is 0 on each example's first token.
    """
    if not rows or any(not row for row in rows):
        raise ValueError("collate_packed needs at least one row, each with at least one example")
    seq_lens = tuple(tuple(len(e) for e in row) for row in rows)
    longest = max(sum(lengths) for lengths in seq_lens)
    width = longest if width is None else width
    if width < longest:
        raise ValueError(f"width={width} is shorter than the longest row ({longest} tokens)")
    input_ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
    labels_mask = torch.zeros((len(rows), width), dtype=torch.float32)
    position_ids = torch.zeros((len(rows), width), dtype=torch.long)
    for r, row in enumerate(rows):
        start = 0
        for example in row:
            end = start + len(example)
            input_ids[r, start:end] = torch.tensor(example.input_ids, dtype=torch.long)
            labels_mask[r, start + 1 : end] = torch.tensor(example.labels_mask[1:], dtype=torch.float32)
            position_ids[r, start:end] = torch.arange(len(example))
            start = end
        # Padding restarts too, so position-derived boundaries set it apart from the last example.
        position_ids[r, start:] = torch.arange(width - start)
    if attention == "block":
        attention_mask: torch.Tensor | None = block_causal_mask(seq_lens, width, dtype)
    elif attention == "position_ids":
        attention_mask = None
    else:
        raise ValueError(f"attention must be 'block' or 'position_ids', got {attention!r}")
    return SFTBatch(
        input_ids=input_ids,
        labels_mask=labels_mask,
        position_ids=position_ids,
        attention_mask=attention_mask,
        seq_lens=seq_lens,
    )
