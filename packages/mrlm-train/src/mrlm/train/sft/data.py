"""Turning a dataset of any supported format into supervised examples, with a report of what was dropped.

Each record's format is detected on its own (see :mod:`mrlm.train.sft.formats`), so one source may
mix chats, prompt/completion pairs and trajectories. Then, in order:

1. reward filtering of trajectory records (``min_reward``, ``top_fraction``); other formats carry
   no reward and pass;
2. conversion to :class:`SFTExample`, with the loss on the ``target`` tokens;
3. examples with no target are dropped (a conversation without a reply, say);
4. truncation to ``max_length`` from the right: the first ``max_length`` tokens are kept, so every
   remaining target keeps the exact context it had (cutting from the left would train later turns
   on a conversation missing its task); examples whose targets all fall beyond the cut are dropped.

Nothing is dropped silently: :class:`SFTDataReport` counts each reason, and a warning is logged
when anything was dropped.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mrlm.train.sft.chat import MaskMethod
from mrlm.train.sft.example import SFTExample, Target
from mrlm.train.sft.filtering import select_by_reward
from mrlm.train.sft.formats import (
    RecordFormat,
    chat_record_example,
    detect_format,
    prompt_completion_example,
)
from mrlm.train.sft.sources import Record, Source, iter_records
from mrlm.train.sft.trajectories import TrajectoryRecord, trajectory_example, trajectory_record

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)


class SFTDataError(ValueError):
    """SFT data that cannot be used: the message names the record (or the file's line) and what is wrong."""


_TARGETS = ("assistant", "environment", "both")


@dataclass
class SFTDataReport:
    """What happened to the records of a source."""

    records: int = 0
    """Records read."""
    formats: Counter[str] = field(default_factory=Counter)
    """Records per detected format."""
    filtered_by_reward: int = 0
    """Trajectories removed by ``min_reward`` or ``top_fraction``."""
    dropped_no_targets: int = 0
    """Examples with no target token at all."""
    dropped_by_truncation: int = 0
    """Examples whose targets all lay beyond ``max_length``."""
    truncated: int = 0
    """Kept examples that were cut to ``max_length``."""
    kept: int = 0
    """Examples returned."""

    @property
    def dropped(self) -> int:
        """Records not returned, whatever the reason."""
        return self.filtered_by_reward + self.dropped_no_targets + self.dropped_by_truncation

    def summary(self) -> str:
        formats = ", ".join(f"{name}: {count}" for name, count in sorted(self.formats.items()))
        return (
            f"{self.kept} of {self.records} records kept{f' ({formats})' if formats else ''}; dropped: "
            f"{self.filtered_by_reward} by reward, {self.dropped_no_targets} without targets, "
            f"{self.dropped_by_truncation} with all targets past max_length; {self.truncated} truncated"
        )


def load_sft_examples(
    source: Source,
    tokenizer: PreTrainedTokenizerBase,
    *,
    target: Target = "assistant",
    max_length: int | None = None,
    min_reward: float | None = None,
    top_fraction: float | None = None,
    chat_method: MaskMethod = "auto",
    add_eos: bool = True,
    vocab_size: int | None = None,
) -> tuple[list[SFTExample], SFTDataReport]:
    """Read ``source`` and return its examples, in source order, and a report.

    Args:
        source: a JSONL path, a list of records, a ``datasets.Dataset``, or trajectories.
        tokenizer: the model's tokenizer, with a chat template for chat records (trajectories are
            never re-tokenized).
        target: which tokens carry the loss: ``"assistant"`` (the model's replies; the completion
            of a prompt/completion record), ``"environment"`` (the environment's turns after the
            first reply, to learn a world model) or ``"both"``.
        max_length: cut longer examples to their first ``max_length`` tokens; None keeps them whole.
        min_reward: keep trajectories whose total reward is at least this.
        top_fraction: keep the best ``ceil(top_fraction * n)`` trajectories of each group of ``n``.
        chat_method: how assistant tokens of chats are found (:mod:`mrlm.train.sft.chat`).
        add_eos: end string completions with the eos token.
        vocab_size: trajectories' token ids must lie in ``[0, vocab_size)``: pass the number of rows
            of the model's input embedding; None takes ``len(tokenizer)``. Other formats' ids come
            from the tokenizer itself.

    Raises:
        ValueError: ``target`` or ``max_length`` out of range.
        SFTDataError: naming the record index (0-based; in a JSONL file, among non-blank lines), for a
            record of unknown format, with missing or malformed fields, with a token id outside the
            vocabulary, or that the chat template refuses (an unknown role, say) or cannot mask; or
            the line of a JSONL file that is not valid JSON.
    """
    if target not in _TARGETS:
        raise ValueError(f"target must be one of {_TARGETS}, got {target!r}")
    if max_length is not None and max_length < 2:
        raise ValueError(
            f"max_length must be at least 2 (a target needs a token before it), got {max_length}"
        )
    if vocab_size is None:
        vocab_size = len(tokenizer)
    try:
        return _load(
            source, tokenizer, target, max_length, min_reward, top_fraction, chat_method, add_eos, vocab_size
        )
    except SFTDataError:
        raise
    except ValueError as error:  # the readers and converters name the record in their messages
        raise SFTDataError(str(error)) from error


def _load(
    source: Source,
    tokenizer: PreTrainedTokenizerBase,
    target: Target,
    max_length: int | None,
    min_reward: float | None,
    top_fraction: float | None,
    chat_method: MaskMethod,
    add_eos: bool,
    vocab_size: int,
) -> tuple[list[SFTExample], SFTDataReport]:
    report = SFTDataReport()
    records: list[tuple[RecordFormat, Record]] = []
    for index, record in enumerate(iter_records(source)):
        kind = detect_format(record, index)
        report.formats[kind] += 1
        records.append((kind, record))
    report.records = len(records)

    trajectories = {
        index: trajectory_record(record, index, vocab_size=vocab_size)
        for index, (kind, record) in enumerate(records)
        if kind == "trajectory"
    }
    selected = _select(trajectories, min_reward, top_fraction)
    report.filtered_by_reward = len(trajectories) - len(selected)

    examples: list[SFTExample] = []
    for index, (kind, record) in enumerate(records):
        if kind == "trajectory":
            if index not in selected:
                continue
            example = trajectory_example(trajectories[index], target)
        else:
            # detect_format only names these formats for mappings.
            assert isinstance(record, Mapping)
            if kind == "chat":
                example = chat_record_example(tokenizer, record, index, target=target, method=chat_method)
            else:
                example = prompt_completion_example(
                    tokenizer, record, index, target=target, method=chat_method, add_eos=add_eos
                )
        if example.num_targets == 0:
            report.dropped_no_targets += 1
            continue
        if max_length is not None and len(example) > max_length:
            example = example.truncated(max_length)
            if example.num_targets == 0:
                report.dropped_by_truncation += 1
                continue
            report.truncated += 1
        examples.append(example)
    report.kept = len(examples)
    if report.dropped:
        logger.warning("SFT data: %s", report.summary())
    return examples, report


def _select(
    trajectories: dict[int, TrajectoryRecord], min_reward: float | None, top_fraction: float | None
) -> set[int]:
    """Indices of the trajectories that pass the reward filters."""
    indices = list(trajectories)
    keep = select_by_reward(
        [trajectories[i] for i in indices], min_reward=min_reward, top_fraction=top_fraction, indices=indices
    )
    return {index for index, kept in zip(indices, keep, strict=True) if kept}
