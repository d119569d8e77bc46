"""Chat loss masks: the template's generation markers and the prefix method mark the same tokens."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mrlm.train.rollout import TemplatePrefixError
from mrlm.train.sft import Target, chat_example, has_generation_markers
from tests.train.sft.builders import CHAT, FIRST, SYSTEM, target_texts

ASSISTANT = ["Is it 5?<|im_end|>", "Is it 2?<|im_end|>", "Then 3!<|im_end|>"]
ENVIRONMENT = [
    "\n<|im_start|>user\nToo high.<|im_end|>\n<|im_start|>assistant\n",
    "\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\n",
]
BOTH = [
    "Is it 5?<|im_end|>\n<|im_start|>user\nToo high.<|im_end|>\n<|im_start|>assistant\n"
    "Is it 2?<|im_end|>\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\nThen 3!<|im_end|>"
]


def test_the_fixture_templates_differ_only_in_markers(tokenizer: Any, plain_tokenizer: Any) -> None:
    assert has_generation_markers(tokenizer) and not has_generation_markers(plain_tokenizer)
    assert plain_tokenizer.apply_chat_template(CHAT, tokenize=False) == tokenizer.apply_chat_template(
        CHAT, tokenize=False
    )


@pytest.mark.parametrize(
    ("target", "expected"), [("assistant", ASSISTANT), ("environment", ENVIRONMENT), ("both", BOTH)]
)
def test_markers_and_prefix_method_agree(
    tokenizer: Any, plain_tokenizer: Any, target: Target, expected: list[str]
) -> None:
    by_markers = chat_example(tokenizer, CHAT, target=target)
    by_prefix = chat_example(plain_tokenizer, CHAT, target=target)  # "auto" falls back: no markers
    assert by_prefix == by_markers
    assert chat_example(tokenizer, CHAT, target=target, method="prefix") == by_markers
    assert target_texts(tokenizer, by_markers) == expected
    rendered = tokenizer.apply_chat_template(CHAT, tokenize=True, return_dict=True)
    assert by_markers.input_ids == list(rendered["input_ids"])


def test_markers_match_transformers_assistant_mask(tokenizer: Any) -> None:
    rendered = tokenizer.apply_chat_template(
        CHAT, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    assert chat_example(tokenizer, CHAT).labels_mask == list(rendered["assistant_masks"])


def test_a_trailing_environment_turn_is_a_target_but_trailing_markup_is_not(tokenizer: Any) -> None:
    ending_with_user = [*CHAT, {"role": "user", "content": "Correct!"}]
    assert target_texts(tokenizer, chat_example(tokenizer, ending_with_user, target="environment")) == [
        *ENVIRONMENT,
        "\n<|im_start|>user\nCorrect!<|im_end|>\n",
    ]
    # CHAT ends with a reply: the newline the template writes after it is nobody's turn.
    example = chat_example(tokenizer, CHAT, target="environment")
    assert tokenizer.decode(example.input_ids[-1:]) == "\n" and example.labels_mask[-1] == 0


def test_consecutive_replies_leave_no_environment_gap(tokenizer: Any) -> None:
    messages = [FIRST, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert target_texts(tokenizer, chat_example(tokenizer, messages, target="environment")) == []
    assert target_texts(tokenizer, chat_example(tokenizer, messages)) == ["a<|im_end|>", "b<|im_end|>"]


@pytest.mark.parametrize("method", ["markers", "prefix"])
def test_messages_before_first_target_message_are_context(tokenizer: Any, method: Any) -> None:
    example = chat_example(tokenizer, CHAT, target="both", first_target_message=4, method=method)
    assert target_texts(tokenizer, example) == [
        "Is it 2?<|im_end|>\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\nThen 3!<|im_end|>"
    ]


def test_empty_and_missing_content_still_train_the_stop_token(tokenizer: Any, plain_tokenizer: Any) -> None:
    messages = [SYSTEM, FIRST, {"role": "assistant", "content": ""}, {"role": "user", "content": "?"}]
    messages.append({"role": "assistant", "content": None})  # type: ignore[dict-item]
    by_markers = chat_example(tokenizer, messages)
    assert by_markers == chat_example(plain_tokenizer, messages)
    assert target_texts(tokenizer, by_markers) == ["<|im_end|>", "<|im_end|>"]


def test_markers_that_do_not_give_one_span_per_reply_are_refused(tokenizer: Any) -> None:
    # Both replies inside one block: no markup between them, so their spans merge.
    broken = copy.deepcopy(tokenizer)
    broken.chat_template = (
        "{% generation %}{% for m in messages %}{{ m['content'] }}{% endfor %}{% endgeneration %}"
    )
    messages = [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    with pytest.raises(ValueError, match="1 spans for 2 assistant messages; use method='prefix'"):
        chat_example(broken, messages)


def test_prefix_method_refuses_a_template_that_rewrites_content(tokenizer: Any) -> None:
    shouting = copy.deepcopy(tokenizer)
    shouting.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] | upper }}\n{% endfor %}"
    )
    with pytest.raises(ValueError, match="message 2: the chat template does not write the assistant content"):
        chat_example(shouting, CHAT)


def test_prefix_method_refuses_a_template_without_the_prefix_property(tokenizer: Any) -> None:
    # Writes the number of messages first: every rendering differs from the shorter ones.
    counting = copy.deepcopy(tokenizer)
    counting.chat_template = "{{ messages | length }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(TemplatePrefixError, match="message 2"):
        chat_example(counting, CHAT)
