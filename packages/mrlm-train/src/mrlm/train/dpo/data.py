"""Preference pairs from TRL's preference formats, tokenized and truncated for DPO.

A record holds a ``chosen`` and a ``rejected`` reply to one prompt, in one of four forms:

* standard, explicit prompt: ``{"prompt": str, "chosen": str, "rejected": str}``;
* conversational, explicit prompt: ``prompt`` a list of messages, ``chosen`` and ``rejected`` lists
  of messages (the reply, usually one assistant message);
* implicit prompt: ``chosen`` and ``rejected`` alone, each the whole text or conversation; the prompt
  is their longest common start (whole messages for conversations; for strings the common characters,
  a trailing space handed back to the replies);
* any of these with ``ref_chosen_logps`` and ``ref_rejected_logps`` (numbers): the reference's log-probs
  of the two replies, computed once before training (see :mod:`mrlm.train.algorithms.dpo`).

Each side is tokenized like an SFT prompt/completion record
(:func:`~mrlm.train.sft.formats.prompt_completion_example`): strings as ``encode(prompt)`` then
``encode(reply)`` and eos, conversations through the chat template; the scored tokens are the
reply's. **Truncation**: each side keeps its first ``max_length`` tokens (prompt first), as TRL's
``keep_start``; a pair where either reply then has no scored token left is dropped and counted.
**Identical replies**: a pair whose chosen and rejected are the same (as given, or the same tokens
once truncated) prefers neither, and its loss is log 2 whatever the model; it is dropped and counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mrlm.train.sft.example import SFTExample
from mrlm.train.sft.formats import prompt_completion_example
from mrlm.train.sft.sources import Source, iter_records

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

REFERENCE_FIELDS = ("ref_chosen_logps", "ref_rejected_logps")


class PreferenceDataError(ValueError):
    """A preference record that cannot be used; the message names the record and the field."""


@dataclass(frozen=True)
class PreferencePair:
    """One prompt's chosen and rejected sequences (prompt + reply each), with the replies' tokens marked."""

    chosen: SFTExample
    rejected: SFTExample
    ref_chosen_logp: float | None = None
    """The reference's log-prob of the chosen reply (sum over its scored tokens), if known."""
    ref_rejected_logp: float | None = None

    @property
    def has_reference(self) -> bool:
        return self.ref_chosen_logp is not None and self.ref_rejected_logp is not None

    def with_reference(self, chosen: float, rejected: float) -> PreferencePair:
        return PreferencePair(self.chosen, self.rejected, chosen, rejected)


@dataclass
class PreferenceReport:
    """What loading kept and dropped."""

    records: int = 0
    kept: int = 0
    truncated: int = 0
    """Pairs of which at least one side was cut to max_length."""
    dropped_empty: int = 0
    """Pairs dropped because a reply had no token left after truncation."""
    dropped_identical: int = 0
    """Pairs dropped because chosen and rejected were the same (as given, or once truncated)."""
    with_reference: int = 0
    dropped_records: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.kept} of {self.records} pairs kept ({self.truncated} truncated, "
            f"{self.dropped_empty} dropped with an empty reply after truncation, "
            f"{self.dropped_identical} with identical replies; "
            f"{self.with_reference} with reference log-probs)"
        )


def load_preference_pairs(
    source: Source, tokenizer: PreTrainedTokenizerBase, *, max_length: int
) -> tuple[list[PreferencePair], PreferenceReport]:
    """Every usable pair of ``source`` (a list of records, a JSONL path or a Hugging Face dataset).

    Pairs with a reply left empty by truncation, or with identical replies, are dropped; the report
    counts them and lists their record indices.

    Raises:
        PreferenceDataError: a record is not a mapping, lacks ``chosen`` or ``rejected``, mixes
            strings and messages, has a malformed message or one the chat template refuses (an
            unknown role, say), has an implicit prompt that the replies do not share, or gives only
            one of the reference fields (or a non-number); the message names the record and the field.
    """
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2, got {max_length}")
    pairs: list[PreferencePair] = []
    report = PreferenceReport()
    for index, record in enumerate(_records(source)):
        report.records += 1
        if not isinstance(record, Mapping):
            raise PreferenceDataError(
                f"record {index}: expected a mapping (a dict), got {type(record).__name__}"
            )
        pair = preference_pair(tokenizer, record, index)
        chosen, rejected = pair.chosen.truncated(max_length), pair.rejected.truncated(max_length)
        if len(chosen) < len(pair.chosen) or len(rejected) < len(pair.rejected):
            report.truncated += 1
        if chosen.num_targets == 0 or rejected.num_targets == 0:
            report.dropped_empty += 1
            report.dropped_records.append(index)
            continue
        if chosen == rejected:  # the same tokens: the same log-probs on both sides
            report.dropped_identical += 1
            report.dropped_records.append(index)
            continue
        pair = PreferencePair(chosen, rejected, pair.ref_chosen_logp, pair.ref_rejected_logp)
        report.kept += 1
        report.with_reference += pair.has_reference
        pairs.append(pair)
    return pairs, report


def _records(source: Source) -> Iterator[Any]:
    """The records of ``source``; a file that cannot be read as JSONL (a line that is not JSON or
    not UTF-8, a directory) raises PreferenceDataError naming the file and line."""
    try:
        yield from iter_records(source)
    except ValueError as error:
        raise PreferenceDataError(str(error)) from None


def preference_pair(
    tokenizer: PreTrainedTokenizerBase, record: Mapping[str, Any], index: int
) -> PreferencePair:
    """The untruncated pair of one record (see the module docstring for the forms)."""
    missing = [name for name in ("chosen", "rejected") if name not in record]
    if missing:
        raise PreferenceDataError(
            f"record {index}: missing field {missing[0]!r} (a preference record needs 'chosen' and "
            f"'rejected', and optionally 'prompt'); found fields {sorted(map(str, record))}"
        )
    chosen, rejected = record["chosen"], record["rejected"]
    if "prompt" in record:
        prompt = record["prompt"]
    else:
        prompt, chosen, rejected = split_implicit_prompt(chosen, rejected, index)
    kinds = {
        name: isinstance(value, str)
        for name, value in (("prompt", prompt), ("chosen", chosen), ("rejected", rejected))
    }
    if len(set(kinds.values())) > 1:
        raise PreferenceDataError(
            f"record {index}: prompt, chosen and rejected must all be strings or all lists of messages; "
            f"strings: {[name for name, is_text in kinds.items() if is_text]}"
        )
    for name, reply in (("chosen", chosen), ("rejected", rejected)):
        if not isinstance(prompt, str) and not prompt and not reply:
            raise PreferenceDataError(f"record {index}: prompt and {name} are both empty lists of messages")
    try:
        sides = [
            prompt_completion_example(
                tokenizer,
                {"prompt": prompt, "completion": reply},
                index,
                target="assistant",
                method="auto",
                fields=("prompt", name),
            )
            for name, reply in (("chosen", chosen), ("rejected", rejected))
        ]
    except ValueError as error:  # a malformed message, or a template that refuses or cannot mark the reply
        raise PreferenceDataError(str(error).replace("(prompt/completion)", "(preference)")) from error
    ref_chosen, ref_rejected = _reference(record, index)
    return PreferencePair(sides[0], sides[1], ref_chosen, ref_rejected)


def split_implicit_prompt(chosen: object, rejected: object, index: int) -> tuple[Any, Any, Any]:
    """``(prompt, chosen reply, rejected reply)`` of a record without ``prompt``; two identical
    conversations that end with an assistant message give that message as the reply."""
    if isinstance(chosen, str) and isinstance(rejected, str):
        shared = _common_length(chosen, rejected)
        while shared > 0 and chosen[shared - 1].isspace():  # the reply keeps its leading space
            shared -= 1
        if shared == 0:
            raise PreferenceDataError(
                f"record {index}: no 'prompt' and chosen and rejected share no prefix to take as the prompt"
            )
        return chosen[:shared], chosen[shared:], rejected[shared:]
    if (
        isinstance(chosen, Sequence)
        and isinstance(rejected, Sequence)
        and not isinstance(chosen, str)
        and not isinstance(rejected, str)
    ):
        shared = _common_length(list(chosen), list(rejected))
        if list(chosen) == list(rejected) and _is_reply(chosen[-1] if chosen else None):
            # No reply of their own to split off: the last (assistant) message is each one's reply,
            # so the pair is validated like any other before its identical replies drop it.
            shared = len(chosen) - 1
        elif shared == 0 or shared in (len(chosen), len(rejected)):
            raise PreferenceDataError(
                f"record {index}: no 'prompt', so chosen and rejected must start with the same messages "
                f"(the prompt) and each add at least one of its own; they share {shared} of "
                f"{len(chosen)} and {len(rejected)}"
            )
        return list(chosen[:shared]), list(chosen[shared:]), list(rejected[shared:])
    raise PreferenceDataError(
        f"record {index}: chosen and rejected must both be strings or both lists of messages, got "
        f"{type(chosen).__name__} and {type(rejected).__name__}"
    )


def _is_reply(message: object) -> bool:
    return isinstance(message, Mapping) and message.get("role") == "assistant"


def _common_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _reference(record: Mapping[str, Any], index: int) -> tuple[float | None, float | None]:
    present = [name for name in REFERENCE_FIELDS if record.get(name) is not None]
    if not present:
        return None, None
    if len(present) == 1:
        other = next(name for name in REFERENCE_FIELDS if name not in present)
        raise PreferenceDataError(
            f"record {index}: has {present[0]!r} but not {other!r}; give both or neither"
        )
    values = []
    for name in REFERENCE_FIELDS:
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PreferenceDataError(f"record {index}: {name!r} must be a finite number, got {value!r}")
        values.append(float(value))
    return values[0], values[1]
