"""Preference records: the four forms, reference fields, truncation and the errors naming a record."""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mrlm.train.dpo import PreferenceDataError, collate_pairs, load_preference_pairs, split_implicit_prompt

CONVERSATION = [{"role": "user", "content": "What is 2+2?"}]


def _reply(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def _scored_text(tokenizer: Any, example: Any) -> str:
    return tokenizer.decode([t for t, m in zip(example.input_ids, example.labels_mask, strict=True) if m])


def test_standard_explicit_scores_reply_and_eos(tokenizer: Any) -> None:
    pairs, report = load_preference_pairs(
        [{"prompt": "Q: 2+2?", "chosen": " 4", "rejected": " 5"}], tokenizer, max_length=64
    )
    assert report.kept == 1
    chosen = pairs[0].chosen
    assert tokenizer.decode(chosen.input_ids) == "Q: 2+2? 4" + tokenizer.eos_token
    assert _scored_text(tokenizer, chosen) == " 4" + tokenizer.eos_token


def test_implicit_prompt_equals_explicit(tokenizer: Any) -> None:
    explicit, _ = load_preference_pairs(
        [{"prompt": "Q: 2+2?", "chosen": " 4", "rejected": " 5"}], tokenizer, max_length=64
    )
    implicit, _ = load_preference_pairs(
        [{"chosen": "Q: 2+2? 4", "rejected": "Q: 2+2? 5"}], tokenizer, max_length=64
    )
    assert implicit == explicit
    assert split_implicit_prompt("ab cd", "ab ce", 0) == ("ab c", "d", "e")


def test_conversational_explicit_and_implicit(tokenizer: Any) -> None:
    explicit, _ = load_preference_pairs(
        [{"prompt": CONVERSATION, "chosen": _reply("4"), "rejected": _reply("five")}],
        tokenizer,
        max_length=128,
    )
    implicit, _ = load_preference_pairs(
        [{"chosen": CONVERSATION + _reply("4"), "rejected": CONVERSATION + _reply("five")}],
        tokenizer,
        max_length=128,
    )
    assert implicit == explicit
    assert _scored_text(tokenizer, explicit[0].chosen) == "4" + tokenizer.eos_token
    assert _scored_text(tokenizer, explicit[0].rejected) == "five" + tokenizer.eos_token


def test_jsonl_and_dataset_sources(tokenizer: Any, tmp_path: Path) -> None:
    from datasets import Dataset  # type: ignore[import-untyped]

    records = [
        {"prompt": "a", "chosen": " b", "rejected": " c"},
        {"prompt": "d", "chosen": " e", "rejected": " f"},
    ]
    path = tmp_path / "prefs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    from_file, _ = load_preference_pairs(path, tokenizer, max_length=32)
    from_dataset, _ = load_preference_pairs(Dataset.from_list(records), tokenizer, max_length=32)
    from_list, _ = load_preference_pairs(records, tokenizer, max_length=32)
    assert from_file == from_dataset == from_list
    assert len(from_list) == 2


def test_reference_fields(tokenizer: Any) -> None:
    record = {
        "prompt": "a",
        "chosen": " b",
        "rejected": " c",
        "ref_chosen_logps": -1.5,
        "ref_rejected_logps": -2,
    }
    pairs, report = load_preference_pairs([record], tokenizer, max_length=32)
    assert (pairs[0].ref_chosen_logp, pairs[0].ref_rejected_logp) == (-1.5, -2.0)
    assert report.with_reference == 1
    assert collate_pairs(pairs, 0).ref_logps is not None
    assert collate_pairs(pairs, 0).ref_logps.tolist() == [-1.5, -2.0]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"prompt": "a", "chosen": " b"}, "record 1: missing field 'rejected'"),
        ({"prompt": "a", "rejected": " b"}, "record 1: missing field 'chosen'"),
        (
            {"prompt": "a", "chosen": " b", "rejected": _reply("c")},
            "record 1: prompt, chosen and rejected must all be",
        ),
        (
            {"chosen": "xyz", "rejected": "abc"},
            "record 1: no 'prompt' and chosen and rejected share no prefix",
        ),
        ({"chosen": CONVERSATION, "rejected": CONVERSATION}, "record 1: no 'prompt', so chosen and rejected"),
        (
            {"prompt": [], "chosen": _reply("b"), "rejected": []},
            "record 1: prompt and rejected are both empty lists of messages",
        ),
        (
            {"prompt": "a", "chosen": " b", "rejected": " c", "ref_chosen_logps": -1.0},
            "record 1: has 'ref_chosen_logps' but not",
        ),
        (
            {
                "prompt": "a",
                "chosen": " b",
                "rejected": " c",
                "ref_chosen_logps": "x",
                "ref_rejected_logps": -1,
            },
            "record 1: 'ref_chosen_logps' must be a finite number",
        ),
        (
            {
                "prompt": CONVERSATION,
                "chosen": [{"content": "b"}],
                "rejected": [{"role": "assistant", "content": "c"}],
            },
            "record 1: chosen[0] must be a mapping with a string 'role'",
        ),
        (
            {
                "prompt": CONVERSATION,
                "chosen": _reply("4"),
                "rejected": [{"role": "assistant", "content": 5}],
            },
            "record 1: rejected[0] content must be a string",
        ),
        (
            {"prompt": CONVERSATION, "chosen": [{"role": "bot", "content": "4"}], "rejected": _reply("5")},
            "record 1 (preference): 'prompt' + 'chosen': the chat template refused the conversation: "
            "Unknown chat role: bot",
        ),
        (
            {"prompt": CONVERSATION, "chosen": _reply("4"), "rejected": [{"role": "bot", "content": "5"}]},
            "record 1 (preference): 'prompt' + 'rejected': the chat template refused the conversation: "
            "Unknown chat role: bot",
        ),
        (
            {
                "chosen": [{"role": "bot", "content": "q"}, *_reply("4")],
                "rejected": [{"role": "bot", "content": "q"}, *_reply("5")],
            },
            "record 1 (preference): 'prompt' + 'chosen': the chat template refused the conversation: "
            "Unknown chat role: bot",
        ),
    ],
)
def test_errors_name_the_record_and_field(tokenizer: Any, record: dict[str, Any], message: str) -> None:
    good = {"prompt": "a", "chosen": " b", "rejected": " c"}
    with pytest.raises(PreferenceDataError, match=re.escape(message)):
        load_preference_pairs([good, record], tokenizer, max_length=32)


def test_truncation_keeps_the_start_and_drops_empty_replies(tokenizer: Any) -> None:
    prompt = "one two three four five six"
    prompt_tokens = len(tokenizer.encode(prompt))
    records = [
        {"prompt": prompt, "chosen": " seven eight nine", "rejected": " ten"},
        {"prompt": prompt + " " + prompt, "chosen": " x", "rejected": " y"},  # its prompt fills max_length
    ]
    pairs, report = load_preference_pairs(records, tokenizer, max_length=prompt_tokens + 2)
    assert report.records == 2 and report.kept == 1 and report.dropped_empty == 1 and report.truncated == 2
    assert report.dropped_records == [1]
    chosen = pairs[0].chosen
    assert len(chosen) == prompt_tokens + 2 and chosen.num_targets == 2
    assert tokenizer.decode(chosen.input_ids).startswith(prompt)


def test_identical_replies_are_dropped_and_counted(tokenizer: Any) -> None:
    """Identical replies prefer neither (a loss of log 2 whatever the model): each form of them is
    dropped like a pair emptied by truncation, and named in the summary."""
    records: list[dict[str, Any]] = [
        {"prompt": "Q: 2+2?", "chosen": " 4", "rejected": " 4"},
        {"prompt": "Q: 2+2?", "chosen": " 4", "rejected": " 5"},  # the one pair kept
        {"chosen": "Q: 2+2? 4", "rejected": "Q: 2+2? 4"},  # implicit prompt
        {"prompt": CONVERSATION, "chosen": _reply("4"), "rejected": _reply("4")},
        {"chosen": CONVERSATION + _reply("4"), "rejected": CONVERSATION + _reply("4")},
    ]
    pairs, report = load_preference_pairs(records, tokenizer, max_length=64)
    assert [tokenizer.decode(p.rejected.input_ids) for p in pairs] == ["Q: 2+2? 5" + tokenizer.eos_token]
    assert (report.records, report.kept, report.dropped_identical, report.dropped_empty) == (5, 1, 4, 0)
    assert report.dropped_records == [0, 2, 3, 4]
    assert "1 of 5 pairs kept" in report.summary() and "4 with identical replies" in report.summary()

    prompt = "one two three four five six"
    cut = [{"prompt": prompt, "chosen": " x y z", "rejected": " x y w"}]  # differs past max_length
    pairs, report = load_preference_pairs(cut, tokenizer, max_length=len(tokenizer.encode(prompt)) + 2)
    assert pairs == [] and report.truncated == 1 and report.dropped_identical == 1


def test_a_byte_order_mark_is_read_past(tokenizer: Any, tmp_path: Path) -> None:
    """Windows editors start a UTF-8 file with a byte order mark; it was 'not valid JSON'."""
    records = [
        {"prompt": "a", "chosen": " b", "rejected": " c"},
        {"prompt": "d", "chosen": " e", "rejected": " f"},
    ]
    path = tmp_path / "bom.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8-sig")
    assert path.read_bytes().startswith(codecs.BOM_UTF8)
    pairs, report = load_preference_pairs(path, tokenizer, max_length=32)
    assert report.kept == 2
    assert pairs == load_preference_pairs(records, tokenizer, max_length=32)[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"prompt": "Q", "chosen": " 4", "rejected": " 5"}\nnot json\n', r"prefs.jsonl:2: not valid JSON"),
        (b'{"chosen": " caf\xe9", "rejected": " 5"}\n', r"prefs.jsonl:1: not UTF-8 text"),
        (None, r"prefs.jsonl is a directory, not a JSONL file"),
    ],
)
def test_a_file_that_is_not_jsonl_is_a_preference_data_error_naming_the_line(
    tokenizer: Any, tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "prefs.jsonl"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(PreferenceDataError, match=message):
        load_preference_pairs(path, tokenizer, max_length=64)
