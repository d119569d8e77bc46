"""Incremental chat tokenization agrees with rendering the whole conversation at once."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mrlm.train.chat_template import CHATML_TEMPLATE, ENDOFTEXT, IM_END
from mrlm.train.rollout import Conversation, TemplatePrefixError

OPENING = [
    {"role": "system", "content": "You are a careful mathematician."},
    {"role": "user", "content": "What is 2 + 2?"},
]
TURNS = [
    ("I think it is 5.", "That answer is not correct. Try again."),
    ("Sorry: 2 + 2 = \\boxed{4}", "Correct. Now, what is 3 * 3?"),
    ("It is 9.\nDone!", None),
]


def _reply(tokenizer: Any, text: str, stop: str | None = IM_END) -> tuple[list[int], list[float]]:
    ids = tokenizer.encode(text) + ([tokenizer.convert_tokens_to_ids(stop)] if stop else [])
    return ids, [-0.5 - i for i in range(len(ids))]


def _opening_ids(tokenizer: Any) -> list[int]:
    rendered = tokenizer.apply_chat_template(OPENING, tokenize=True, add_generation_prompt=True)
    return list(rendered["input_ids"])


def _three_turns(tokenizer: Any) -> Conversation:
    conversation = Conversation(tokenizer, OPENING)
    for reply, feedback in TURNS:
        ids, logprobs = _reply(tokenizer, reply)
        assert conversation.add_reply(ids, logprobs, stopped=True) == reply
        if feedback is not None:
            assert conversation.add_user(feedback)
    return conversation


def test_three_turns_decode_to_the_template_rendering(tokenizer: Any) -> None:
    conversation = _three_turns(tokenizer)
    rendered = tokenizer.apply_chat_template(conversation.messages, tokenize=False)
    decoded = tokenizer.decode(conversation.token_ids, skip_special_tokens=False)
    # The ids end with the last generated token; the template's closing newline would come next.
    assert rendered == decoded + "\n"
    assert [m["role"] for m in conversation.messages] == [
        "system",
        "user",
        *["assistant", "user"] * 2,
        "assistant",
    ]


def test_mask_matches_the_template_assistant_mask(tokenizer: Any) -> None:
    conversation = _three_turns(tokenizer)
    reference = tokenizer.apply_chat_template(
        conversation.messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = reference["input_ids"], reference["assistant_masks"]
    assert conversation.token_ids == ids[:-1] and tokenizer.decode(ids[-1:]) == "\n"
    assert conversation.mask == mask[:-1]


def test_logprobs_sit_on_the_generated_tokens(tokenizer: Any) -> None:
    conversation = _three_turns(tokenizer)
    generated = [lp for lp, m in zip(conversation.logprobs, conversation.mask, strict=True) if m]
    expected = [lp for reply, _ in TURNS for lp in _reply(tokenizer, reply)[1]]
    assert generated == expected
    assert all(lp == 0.0 for lp, m in zip(conversation.logprobs, conversation.mask, strict=True) if not m)


def test_a_reply_cut_by_length_is_closed_by_the_template(tokenizer: Any) -> None:
    conversation = Conversation(tokenizer, OPENING)
    ids, logprobs = _reply(tokenizer, "Let me think about", stop=None)
    assert conversation.add_reply(ids, logprobs, stopped=False) == "Let me think about"
    conversation.add_user("Go on.")
    decoded = tokenizer.decode(conversation.token_ids, skip_special_tokens=False)
    prompt = tokenizer.apply_chat_template(conversation.messages, tokenize=False, add_generation_prompt=True)
    assert decoded == prompt
    # The end-of-turn token the model never wrote is template text: mask 0.
    end = len(_opening_ids(tokenizer)) + len(ids)
    assert conversation.token_ids[end] == tokenizer.convert_tokens_to_ids(IM_END)
    assert conversation.mask[end] == 0 and conversation.mask[end - len(ids) : end] == [1] * len(ids)


def test_another_stop_token_stays_and_the_turn_is_still_closed(tokenizer: Any) -> None:
    conversation = Conversation(tokenizer, OPENING)
    ids, logprobs = _reply(tokenizer, "4", stop=ENDOFTEXT)
    assert conversation.add_reply(ids, logprobs, stopped=True) == "4"
    conversation.add_user("Why?")
    decoded = tokenizer.decode(conversation.token_ids, skip_special_tokens=False)
    assert f"assistant\n4{ENDOFTEXT}{IM_END}\n<|im_start|>user\nWhy?" in decoded


def test_max_tokens_refuses_without_changing_anything(tokenizer: Any) -> None:
    conversation = Conversation(tokenizer, OPENING)
    conversation.add_reply(*_reply(tokenizer, "5"), stopped=True)
    before = (list(conversation.token_ids), list(conversation.mask), list(conversation.messages))
    assert not conversation.add_user("A long answer " * 20, max_tokens=len(conversation) + 10)
    assert (conversation.token_ids, conversation.mask, conversation.messages) == before
    assert conversation.add_user("Short.", max_tokens=len(conversation) + 20)


def test_turns_must_alternate(tokenizer: Any) -> None:
    conversation = Conversation(tokenizer, OPENING)
    with pytest.raises(ValueError, match="add_reply"):
        conversation.add_user("again")
    conversation.add_reply(*_reply(tokenizer, "5"), stopped=True)
    with pytest.raises(ValueError, match="add_user"):
        conversation.add_reply(*_reply(tokenizer, "6"), stopped=True)
    with pytest.raises(ValueError, match="user turn"):
        Conversation(tokenizer, OPENING[:1])


def test_a_template_that_rewrites_earlier_turns_is_refused(tokenizer: Any) -> None:
    counting = copy.deepcopy(tokenizer)
    counting.chat_template = "{{- messages | length -}}\n" + CHATML_TEMPLATE
    conversation = Conversation(counting, OPENING)
    conversation.add_reply(*_reply(counting, "5"), stopped=True)
    with pytest.raises(TemplatePrefixError, match="earlier turns"):
        conversation.add_user("No.")


def test_a_template_that_trims_replies_still_works(tokenizer: Any) -> None:
    trimming = copy.deepcopy(tokenizer)
    trimming.chat_template = CHATML_TEMPLATE.replace(
        "(message.get('content') or '') + '<|im_end|>' -}}",
        "(message.get('content') or '') | trim + '<|im_end|>' -}}",
    )
    assert trimming.chat_template != CHATML_TEMPLATE
    conversation = Conversation(trimming, OPENING)
    ids, logprobs = _reply(trimming, "  5  ")
    conversation.add_reply(ids, logprobs, stopped=True)
    conversation.add_user("No.")
    decoded = trimming.decode(conversation.token_ids, skip_special_tokens=False)
    # The sampled reply keeps its spaces; only the markup comes from the template.
    assert decoded.endswith(
        f"assistant\n  5  {IM_END}\n<|im_start|>user\nNo.{IM_END}\n<|im_start|>assistant\n"
    )


def test_openings_rendered_once_follow_the_tokenizers_template(tokenizer: Any) -> None:
    """Episodes that open alike share one rendering; a changed template is rendered anew."""
    opening = [{"role": "user", "content": "What is 3 + 4?"}]
    first, second = Conversation(tokenizer, opening), Conversation(tokenizer, opening)
    expected = tokenizer.encode(
        tokenizer.apply_chat_template(opening, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    )
    assert first.token_ids == second.token_ids == expected
    first.token_ids.append(0)  # each conversation owns its list
    assert second.token_ids == expected
    other = copy.deepcopy(tokenizer)
    other.chat_template = "PLAIN {{ messages[-1]['content'] }}"
    assert Conversation(other, opening).token_ids == other.encode(
        "PLAIN What is 3 + 4?", add_special_tokens=False
    )
    with_name = [{"role": "user", "content": "What is 3 + 4?", "name": "alice"}]
    assert Conversation(tokenizer, with_name).token_ids == expected  # rendered directly, not cached
