"""Supervised examples as tensors: the batch type and the default, padded, collation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mrlm.train.sft.example import SFTExample


@dataclass(frozen=True)
class SFTBatch:
    """``B`` rows of ``T`` tokens, each row one example (padded) or several (packed)."""

    input_ids: torch.Tensor
    """``[B, T]`` long: token ids, padding at the end of each row."""
    labels_mask: torch.Tensor
    """``[B, T]`` float: 1 on target tokens, 0 on context and padding. In packed rows each example's
    first token is 0, since nothing of its own precedes it; column 0 never counts in the loss."""
    position_ids: torch.Tensor
    """``[B, T]`` long: each example's positions, from 0 (padding positions carry no meaning)."""
    attention_mask: torch.Tensor | None
    """``[B, T]`` long (1 on real tokens) for padded rows; ``[B, 1, T, T]`` additive float mask
    (0 where a query may attend, the dtype's minimum elsewhere) for block-diagonal packed rows;
    None for packed rows that rely on ``position_ids`` alone (see :mod:`mrlm.train.sft.packing`)."""
    seq_lens: tuple[tuple[int, ...], ...]
    """Per row, the lengths of its examples in order (padding excluded)."""

    @property
    def num_targets(self) -> float:
        """Target tokens the loss scores: the normaliser of a full-batch mean."""
        return float(self.labels_mask[:, 1:].sum().item())

    def cu_seqlens(self) -> torch.Tensor:
        """``[N + 1]`` int32 cumulative boundaries of the segments of the flattened ``[B * T]`` tokens.

        Each example is a segment, and so is each row's trailing padding when there is any: the
        segments cover all ``B * T`` tokens, as varlen attention kernels expect of a flattened batch.
        """
        width = self.input_ids.shape[1]
        bounds = [0]
        for row, lengths in enumerate(self.seq_lens):
            for length in lengths:
                bounds.append(bounds[-1] + length)
            if sum(lengths) < width:
                bounds.append((row + 1) * width)
        return torch.tensor(bounds, dtype=torch.int32)

    def model_inputs(self) -> dict[str, Any]:
        """Keyword arguments for a Hugging Face causal LM's forward.

        ``use_cache=False``: training needs no cache, and with a cache transformers ignores the
        packed-sequence structure of ``position_ids`` when no attention mask is given.
        """
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "position_ids": self.position_ids,
            "use_cache": False,
        }

    def to(self, device: torch.device | str) -> SFTBatch:
        return SFTBatch(
            input_ids=self.input_ids.to(device),
            labels_mask=self.labels_mask.to(device),
            position_ids=self.position_ids.to(device),
            attention_mask=None if self.attention_mask is None else self.attention_mask.to(device),
            seq_lens=self.seq_lens,
        )


def collate_padded(examples: Sequence[SFTExample], pad_token_id: int) -> SFTBatch:
    """One example per row, right-padded to the longest; ``attention_mask`` is ``[B, T]``."""
    if not examples:
        raise ValueError("collate_padded needs at least one example")
    batch, width = len(examples), max(len(e) for e in examples)
    input_ids = torch.full((batch, width), pad_token_id, dtype=torch.long)
    labels_mask = torch.zeros((batch, width), dtype=torch.float32)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example)
        input_ids[row, :n] = torch.tensor(example.input_ids, dtype=torch.long)
        labels_mask[row, :n] = torch.tensor(example.labels_mask, dtype=torch.float32)
        attention_mask[row, :n] = 1
    position_ids = torch.arange(width, dtype=torch.long).expand(batch, width).clone()
    return SFTBatch(
        input_ids=input_ids,
        labels_mask=labels_mask,
        position_ids=position_ids,
        attention_mask=attention_mask,
        seq_lens=tuple((len(e),) for e in examples),
    )
