"""Loading records of every format: masks, detection, errors, truncation and the drop report."""

from __future__ import annotations

import codecs
import copy
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from mrlm.train.sft import MaskMethod, SFTDataError, SFTExample, load_sft_examples
from tests.train.sft.builders import CHAT, FIRST, SYSTEM, guessing_trajectory, target_texts


def test_string_prompt_completion_trains_the_completion_and_eos(tokenizer: Any) -> None:
    (example,), report = load_sft_examples([{"prompt": "2 + 2 =", "completion": " 4"}], tokenizer)
    assert example.input_ids == [
        *tokenizer.encode("2 + 2 ="),
        *tokenizer.encode(" 4"),
        tokenizer.eos_token_id,
    ]
    assert target_texts(tokenizer, example) == [" 4<|im_end|>"]
    assert report.formats == {"prompt_completion": 1}
    (without_eos,), _ = load_sft_examples(
        [{"prompt": "2 + 2 =", "completion": " 4"}], tokenizer, add_eos=False
    )
    assert target_texts(tokenizer, without_eos) == [" 4"]


def test_conversational_prompt_completion_trains_only_the_completion(tokenizer: Any) -> None:
    record = {"prompt": CHAT[:5], "completion": CHAT[5:]}
    (assistant,), _ = load_sft_examples([record], tokenizer)
    assert target_texts(tokenizer, assistant) == ["Then 3!<|im_end|>"]
    (both,), _ = load_sft_examples([record], tokenizer, target="both")
    assert target_texts(tokenizer, both) == [
        "\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\nThen 3!<|im_end|>"
    ]
    assert both.input_ids == tokenizer.apply_chat_template(CHAT, return_dict=True)["input_ids"]


def test_chat_records_follow_the_target(tokenizer: Any) -> None:
    (example,), _ = load_sft_examples([{"messages": CHAT}], tokenizer, target="environment")
    assert target_texts(tokenizer, example) == [
        "\n<|im_start|>user\nToo high.<|im_end|>\n<|im_start|>assistant\n",
        "\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\n",
    ]


def test_formats_are_detected_per_record_and_order_is_kept(tokenizer: Any) -> None:
    trajectory = guessing_trajectory(tokenizer)
    records: list[Any] = [{"prompt": "a", "completion": "b"}, trajectory, {"messages": CHAT}]
    examples, report = load_sft_examples(records, tokenizer)
    assert report.formats == {"prompt_completion": 1, "trajectory": 1, "chat": 1}
    assert examples[1].input_ids == trajectory.token_ids
    assert target_texts(tokenizer, examples[2])[0] == "Is it 5?<|im_end|>"


class _RowDataset:
    """Iterates like a ``datasets.Dataset``: one dict per row."""

    column_names = ("messages",)

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)


def test_sources_list_jsonl_and_dataset_agree(tokenizer: Any, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [{"messages": CHAT}, {"prompt": "x", "completion": "y"}]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n\n", encoding="utf-8")
    from_list, _ = load_sft_examples(rows, tokenizer)
    assert load_sft_examples(path, tokenizer)[0] == from_list
    assert load_sft_examples(str(path), tokenizer)[0] == from_list
    assert load_sft_examples(_RowDataset(rows), tokenizer)[0] == from_list


def test_a_byte_order_mark_is_read_past(tokenizer: Any, tmp_path: Path) -> None:
    """Windows editors start a UTF-8 file with a byte order mark; it was 'not valid JSON'."""
    from mrlm.train.sft.sources import check_has_records

    rows: list[dict[str, Any]] = [{"messages": CHAT}, {"prompt": "x", "completion": "y"}]
    path = tmp_path / "bom.jsonl"
    path.write_text("".join(json.dumps(r) + "\r\n" for r in rows), encoding="utf-8-sig")
    assert path.read_bytes().startswith(codecs.BOM_UTF8)
    assert load_sft_examples(path, tokenizer)[0] == load_sft_examples(rows, tokenizer)[0]
    only_mark = tmp_path / "only_mark.jsonl"
    only_mark.write_bytes(codecs.BOM_UTF8 + b"\n")
    with pytest.raises(SFTDataError, match=r"only_mark\.jsonl holds no records"):
        check_has_records(only_mark, SFTDataError)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(codecs.BOM_UTF8 + b'{"prompt": "caf\xe9", "completion": "b"}\n')
    with pytest.raises(SFTDataError, match=r"bad\.jsonl:1: not UTF-8 text \(byte 18\)"):
        load_sft_examples(bad, tokenizer)  # the byte counts from the file's start, mark included


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [{"messages": CHAT}, {"text": "hi", "id": 3}],
            "record 1: unknown format; expected 'messages', .*found fields \\['id', 'text'\\]",
        ),
        ([{"prompt": "x"}], "record 0 \\(prompt/completion\\): missing field 'completion'"),
        ([{"completion": "x"}], "record 0 \\(prompt/completion\\): missing field 'prompt'"),
        (
            [{"prompt": "x", "completion": [SYSTEM]}],
            "record 0 \\(prompt/completion\\): prompt and completion must both",
        ),
        ([{"messages": "hello"}], "record 0: 'messages' must be a list of messages, got str"),
        ([{"messages": CHAT}, {"messages": []}], "record 1: 'messages' is empty"),
        (
            [{"prompt": [], "completion": []}],
            "record 0 \\(prompt/completion\\): prompt and completion are both empty",
        ),
        (
            [{"messages": [{"content": "hi"}]}],
            "record 0: messages\\[0\\] must be a mapping with a string 'role'",
        ),
        (
            [{"messages": [{"role": "user", "content": 3}]}],
            "record 0: messages\\[0\\] content must be a string",
        ),
        ([{"token_ids": [1, 2]}], "record 0 \\(trajectory\\): missing field\\(s\\) 'mask'"),
        (["just text"], "record 0: expected a mapping \\(a dict\\), got str"),
    ],
)
def test_bad_records_name_their_index_and_fields(tokenizer: Any, records: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_sft_examples(records, tokenizer)


def test_bad_sources_and_options_are_refused(tokenizer: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a", "completion": "b"}\n{oops\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: not valid JSON"):
        load_sft_examples(path, tokenizer)
    path.write_text('{"prompt": "a", "completion": "b"}\n' + "[" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(SFTDataError, match=r"bad\.jsonl:2: JSON nested too deeply"):
        load_sft_examples(path, tokenizer)  # the decoder's RecursionError was a traceback
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'{"prompt": "a", "completion": "b"}\n{"prompt": "caf\xe9", "completion": "b"}\n')
    with pytest.raises(SFTDataError, match=r"latin1\.jsonl:2: not UTF-8 text \(byte 15\)"):
        load_sft_examples(latin1, tokenizer)
    with pytest.raises(SFTDataError, match="is a directory, not a JSONL file"):
        load_sft_examples(tmp_path, tokenizer)
    with pytest.raises(ValueError, match="pass one split of a DatasetDict"):
        load_sft_examples(cast(Any, {"train": []}), tokenizer)
    with pytest.raises(ValueError, match="target must be one of"):
        load_sft_examples([], tokenizer, target="user")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="string records have no environment turns"):
        load_sft_examples([{"prompt": "a", "completion": "b"}], tokenizer, target="environment")


def test_truncation_keeps_the_start_and_counts_every_drop(
    tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    full, _ = load_sft_examples([{"messages": CHAT}], tokenizer)
    mask = full[0].labels_mask
    reply_starts = [t for t in range(1, len(mask)) if mask[t] and not mask[t - 1]]
    cut = reply_starts[1] + 2  # two tokens into the second reply
    records: list[dict[str, Any]] = [
        {"messages": CHAT},  # cut inside its second reply: kept, truncated
        {"messages": [SYSTEM, FIRST]},  # no reply: no target
        {"messages": CHAT[:3]},  # short: kept whole
        {"prompt": "p" * 200, "completion": "c"},  # its target lies past the cut
    ]
    with caplog.at_level(logging.WARNING, logger="mrlm.train.sft.data"):
        examples, report = load_sft_examples(records, tokenizer, max_length=cut)
    assert len(examples) == 2 and report.kept == 2 and report.records == 4
    assert report.truncated == 1 and report.dropped_no_targets == 1 and report.dropped_by_truncation == 1
    assert report.dropped == 2
    assert examples[0] == SFTExample(full[0].input_ids[:cut], mask[:cut])
    kept_part = tokenizer.decode(full[0].input_ids[reply_starts[1] : cut])
    assert target_texts(tokenizer, examples[0]) == ["Is it 5?<|im_end|>", kept_part]
    assert "Is it 2?".startswith(kept_part) and kept_part != "Is it 2?"
    assert "2 of 4 records kept" in caplog.text and "1 without targets" in caplog.text
    with pytest.raises(ValueError, match="max_length must be at least 2"):
        load_sft_examples(records, tokenizer, max_length=1)


def test_nothing_dropped_logs_nothing(tokenizer: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mrlm.train.sft.data"):
        _, report = load_sft_examples([{"messages": CHAT}], tokenizer)
    assert report.dropped == 0 and caplog.text == ""
    assert report.summary().startswith("1 of 1 records kept (chat: 1)")
    assert load_sft_examples([], tokenizer)[1].summary().startswith("0 of 0 records kept; dropped:")


def test_check_has_records_reads_files_only_up_to_a_record(tmp_path: Path) -> None:
    from mrlm.train.sft.sources import check_has_records

    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n")
    with pytest.raises(SFTDataError, match=r"blank\.jsonl holds no records"):
        check_has_records(blank, SFTDataError)
    later = tmp_path / "later.jsonl"
    later.write_text('\n{"prompt": "a", "completion": "b"}\n')
    check_has_records(later, SFTDataError)
    check_has_records([], SFTDataError)  # sources other than files are counted as they are read
    read, write = os.pipe()
    os.write(write, b'{"prompt": "a", "completion": "b"}\n')
    os.close(write)
    check_has_records(f"/proc/self/fd/{read}", SFTDataError)  # a pipe is not read: nothing consumed
    assert os.read(read, 100).startswith(b'{"prompt"')
    os.close(read)


@pytest.mark.parametrize("method", ["markers", "prefix"])
def test_a_conversation_the_chat_template_refuses_names_the_record_and_field(
    tokenizer: Any, method: MaskMethod
) -> None:
    bot = [FIRST, {"role": "bot", "content": "yo"}]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"messages": bot}, "record 1: 'messages': "),
        (
            {"prompt": [FIRST], "completion": bot[1:]},
            "record 1 (prompt/completion): 'prompt' + 'completion': ",
        ),
    ]
    for record, where in cases:
        with pytest.raises(SFTDataError) as caught:
            load_sft_examples([{"messages": CHAT}, record], tokenizer, chat_method=method)
        assert (
            str(caught.value) == f"{where}the chat template refused the conversation: Unknown chat role: bot"
        )


def test_a_template_that_cannot_mask_a_record_names_it(tokenizer: Any) -> None:
    broken = copy.deepcopy(tokenizer)  # both replies in one block: one span for two replies
    broken.chat_template = (
        "{% generation %}{% for m in messages %}{{ m['content'] }}{% endfor %}{% endgeneration %}"
    )
    with pytest.raises(SFTDataError, match="record 0: 'messages': the chat template's generation markers"):
        load_sft_examples([{"messages": CHAT}], broken)
