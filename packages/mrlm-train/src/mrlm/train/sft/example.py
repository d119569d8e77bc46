"""One supervised example: a token sequence and where the loss applies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Target = Literal["assistant", "environment", "both"]
"""What an example teaches: the model's own replies, the environment's replies, or both."""


@dataclass(frozen=True)
class SFTExample:
    """``T`` token ids and a ``T``-long 0/1 loss mask.

    ``labels_mask[t] == 1`` means token ``t`` is a *target*: the loss scores the model's prediction
    of ``input_ids[t]`` from the positions before it. ``labels_mask[0]`` can never count, since
    nothing precedes the first token; :attr:`num_targets` leaves it out.
    """

    input_ids: list[int]
    labels_mask: list[int]

    def __post_init__(self) -> None:
        if len(self.input_ids) != len(self.labels_mask):
            raise ValueError(
                f"input_ids and labels_mask differ in length: {len(self.input_ids)} and {len(self.labels_mask)}"
            )
        if any(m not in (0, 1) for m in self.labels_mask):
            raise ValueError("labels_mask holds values other than 0 and 1")

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def num_targets(self) -> int:
        """Tokens the loss actually scores: masked tokens after the first."""
        return sum(self.labels_mask[1:])

    def truncated(self, max_length: int) -> SFTExample:
        """The first ``max_length`` tokens (right truncation keeps every target's true context)."""
        if max_length < 1:
            raise ValueError(f"max_length must be at least 1, got {max_length}")
        return SFTExample(self.input_ids[:max_length], self.labels_mask[:max_length])
