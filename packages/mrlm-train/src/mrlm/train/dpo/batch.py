"""Preference pairs as one padded batch: the chosen sequences' rows first, then the rejected ones'."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mrlm.train.dpo.data import PreferencePair


@dataclass(frozen=True)
class PairBatch:
    """``P`` pairs as ``2P`` right-padded rows of ``T`` tokens: row ``i`` is pair ``i``'s chosen
    sequence, row ``P + i`` its rejected one."""

    input_ids: torch.Tensor
    """``[2P, T]`` long."""
    attention_mask: torch.Tensor
    """``[2P, T]`` long: 1 on real tokens."""
    completion_mask: torch.Tensor
    """``[2P, T]`` long: 1 on the reply's scored tokens (never column 0)."""
    ref_logps: torch.Tensor | None
    """``[2P]`` float32: the reference's sequence log-probs (chosen then rejected), when the pairs carry them."""

    @property
    def num_pairs(self) -> int:
        return int(self.input_ids.shape[0]) // 2

    @property
    def lengths(self) -> torch.Tensor:
        """``[2P]`` scored tokens per row."""
        return self.completion_mask.sum(dim=1)

    def to(self, device: torch.device | str) -> PairBatch:
        return PairBatch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.completion_mask.to(device),
            None if self.ref_logps is None else self.ref_logps.to(device),
        )


def collate_pairs(pairs: Sequence[PreferencePair], pad_token_id: int) -> PairBatch:
    """The :class:`PairBatch` of ``pairs``; reference log-probs only if every pair has them."""
    if not pairs:
        raise ValueError("collate_pairs needs at least one pair")
    sequences = [pair.chosen for pair in pairs] + [pair.rejected for pair in pairs]
    width = max(len(sequence) for sequence in sequences)
    input_ids = torch.full((len(sequences), width), pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    completion = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        n = len(sequence)
        input_ids[row, :n] = torch.tensor(sequence.input_ids, dtype=torch.long)
        attention[row, :n] = 1
        completion[row, :n] = torch.tensor(sequence.labels_mask, dtype=torch.long)
    completion[:, 0] = 0  # the first token has no context to be scored from
    ref = None
    if all(pair.has_reference for pair in pairs):
        values = [pair.ref_chosen_logp for pair in pairs] + [pair.ref_rejected_logp for pair in pairs]
        ref = torch.tensor(values, dtype=torch.float32)
    return PairBatch(input_ids, attention, completion, ref)
