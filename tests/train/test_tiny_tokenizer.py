"""The tiny tokenizer: lossless byte-level BPE, special tokens and the ChatML template."""

from __future__ import annotations

import unicodedata
from typing import Any

import jinja2
import pytest
from transformers import BatchEncoding, PreTrainedTokenizerFast

from mrlm.train.chat_template import ENDOFTEXT, IM_END, IM_START
from mrlm.train.tiny import build_tiny_tokenizer

ROUND_TRIP_CASES = [
    "",
    "hello world",
    "  leading and trailing spaces  ",
    "line one\nline two\n\n\tindented\r\nwindows line",
    "def add(a: int, b: int) -> int:\n    return a + b  # sum\n",
    'print({"k": [1, 2.5, None]}, sep="\\t")',
    "12345678901234567890 + 0.001 = ?",
    "emoji 👋🏽 family 👨‍👩‍👧 flag 🇫🇷",
    "漢字 かな 한국어 Ελληνικά русский עברית العربية",
    "∑ x² ≤ 10³ ∀ε>0 ∃δ",
    "control \x00\x07\x1b[0m bytes",
    "noncharacter \uffff and astral \U0001d518\U0001d52b\U0001d526",
    "precomposed café naïve Ångström",
    "special tokens as text: <|im_start|>user\nhi<|im_end|><|endoftext|>",
]


@pytest.mark.parametrize("text", ROUND_TRIP_CASES)
def test_decode_encode_round_trip_is_lossless(tokenizer: PreTrainedTokenizerFast, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text


def test_text_is_normalised_to_nfc(tokenizer: PreTrainedTokenizerFast) -> None:
    # Decomposed input comes back composed: the NFC normaliser that Qwen2Tokenizer also applies.
    decomposed = "cafe\u0301"
    ids = tokenizer.encode(decomposed, add_special_tokens=False)
    assert tokenizer.decode(ids) == unicodedata.normalize("NFC", decomposed) == "caf\u00e9"


def test_bpe_merges_make_common_text_shorter_than_its_bytes(tokenizer: PreTrainedTokenizerFast) -> None:
    text = "The answer is the number of the question."
    assert len(tokenizer.encode(text)) < len(text.encode()) / 2


def test_special_tokens(tokenizer: PreTrainedTokenizerFast) -> None:
    assert tokenizer.convert_tokens_to_ids([ENDOFTEXT, IM_START, IM_END]) == [0, 1, 2]
    assert tokenizer.eos_token == IM_END
    assert tokenizer.pad_token == ENDOFTEXT
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert tokenizer.bos_token is None
    assert set(tokenizer.all_special_tokens) == {ENDOFTEXT, IM_START, IM_END}
    assert tokenizer.padding_side == "right"
    # Special token text encodes to the single special token id.
    assert tokenizer.encode(IM_END) == [2]


def test_encoding_adds_no_special_tokens(tokenizer: PreTrainedTokenizerFast) -> None:
    ids = tokenizer("hello")["input_ids"]
    assert not {0, 1, 2} & set(ids)
    assert tokenizer.decode(ids) == "hello"


def test_vocab_size_and_determinism(tokenizer: PreTrainedTokenizerFast) -> None:
    assert len(tokenizer) == 512
    again = build_tiny_tokenizer()
    assert again.get_vocab() == tokenizer.get_vocab()
    assert again.backend_tokenizer.to_str() == tokenizer.backend_tokenizer.to_str()


def test_vocab_size_is_a_parameter() -> None:
    small = build_tiny_tokenizer(vocab_size=300)
    assert len(small) == 300
    assert small.decode(small.encode("any text ✓")) == "any text ✓"


def test_custom_corpus_stays_lossless() -> None:
    custom = build_tiny_tokenizer(["abab abab abab", "cdcd cdcd"] * 5, vocab_size=400)
    # A tiny corpus has few mergeable pairs: the vocabulary is bytes + specials + those merges.
    assert 259 < len(custom) < 400
    assert custom.decode(custom.encode("unseen text: 猫 🐈")) == "unseen text: 猫 🐈"


def test_vocab_size_below_bytes_and_specials_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least 259"):
        build_tiny_tokenizer(vocab_size=258)


def _render(tokenizer: PreTrainedTokenizerFast, messages: list[dict[str, str]], **kwargs: Any) -> str:
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    assert isinstance(rendered, str)
    return rendered


def _encode_chat(
    tokenizer: PreTrainedTokenizerFast, messages: list[dict[str, str]], **kwargs: Any
) -> BatchEncoding:
    encoded = tokenizer.apply_chat_template(messages, return_dict=True, **kwargs)
    assert isinstance(encoded, BatchEncoding)
    return encoded


CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": "5"},
    {"role": "user", "content": "And 2 * 3?"},
    {"role": "assistant", "content": "It is 6.\nDone."},
]


def test_chat_template_renders_chatml(tokenizer: PreTrainedTokenizerFast) -> None:
    assert _render(tokenizer, CONVERSATION) == (
        "<|im_start|>system\nYou are terse.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        "<|im_start|>assistant\n5<|im_end|>\n"
        "<|im_start|>user\nAnd 2 * 3?<|im_end|>\n"
        "<|im_start|>assistant\nIt is 6.\nDone.<|im_end|>\n"
    )


def test_generation_prompt_opens_an_assistant_turn(tokenizer: PreTrainedTokenizerFast) -> None:
    messages = CONVERSATION[:2]
    with_prompt = _render(tokenizer, messages, add_generation_prompt=True)
    without = _render(tokenizer, messages)
    assert with_prompt == without + "<|im_start|>assistant\n"
    assert not without.endswith("<|im_start|>assistant\n")


def test_tool_turns_render_and_unknown_roles_are_rejected(tokenizer: PreTrainedTokenizerFast) -> None:
    assert (
        _render(tokenizer, [{"role": "tool", "content": '{"x": 1}'}])
        == '<|im_start|>tool\n{"x": 1}<|im_end|>\n'
    )
    with pytest.raises(jinja2.TemplateError, match="Unknown chat role: narrator"):
        _render(tokenizer, [{"role": "narrator", "content": "x"}])


def test_chat_template_tokens_match_encoding_the_rendered_text(tokenizer: PreTrainedTokenizerFast) -> None:
    ids = _encode_chat(tokenizer, CONVERSATION)["input_ids"]
    assert ids == tokenizer.encode(_render(tokenizer, CONVERSATION))
    assert ids.count(tokenizer.eos_token_id) == len(CONVERSATION)


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    """Maximal runs of ones as (start, end) index pairs."""
    spans: list[tuple[int, int]] = []
    start = None
    for index, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = index
        elif not bit and start is not None:
            spans.append((start, index))
            start = None
    return spans


def test_assistant_mask_covers_exactly_assistant_content_and_end_token(
    tokenizer: PreTrainedTokenizerFast,
) -> None:
    out = _encode_chat(tokenizer, CONVERSATION, return_assistant_tokens_mask=True)
    ids, mask = out["input_ids"], out["assistant_masks"]
    assert len(mask) == len(ids)
    decoded = [tokenizer.decode(ids[start:end]) for start, end in _spans(mask)]
    assert decoded == ["5<|im_end|>", "It is 6.\nDone.<|im_end|>"]
    # Every masked span ends on the eos token, so a policy learns to stop.
    assert all(ids[end - 1] == tokenizer.eos_token_id for _, end in _spans(mask))


def test_assistant_mask_with_tensors(tokenizer: PreTrainedTokenizerFast) -> None:
    out = _encode_chat(tokenizer, CONVERSATION[:3], return_assistant_tokens_mask=True, return_tensors="pt")
    assert out["assistant_masks"].shape == out["input_ids"].shape
    masked = out["input_ids"][out["assistant_masks"].bool()]
    assert tokenizer.decode(masked) == "5<|im_end|>"
