"""The tiny tokenizer's chat template renders tool calls, tool results and tool schemas, and its
response template parses a reply back into content and tool calls: what TRL's tool-calling rollouts
(``environment_factory``) need. Conversations without tools render as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer, PreTrainedTokenizerFast

from mrlm.train.chat_template import TOOLS_FOOTER, TOOLS_HEADER

CALL = {"type": "function", "function": {"name": "submit", "arguments": {"text": "\\boxed{4}"}}}

TOOL_CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "2 + 2?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "name": "submit", "content": "Correct."},
    {"role": "assistant", "content": "Done."},
]


def submit(text: str) -> str:
    """Send a reply.

    Args:
        text: the reply.
    """
    return text


def _render(tokenizer: PreTrainedTokenizerFast, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    assert isinstance(rendered, str)
    return rendered


def test_tool_calls_and_results_render_in_chatml(tokenizer: PreTrainedTokenizerFast) -> None:
    assert _render(tokenizer, TOOL_CONVERSATION) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\n2 + 2?<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>{"name": "submit", "arguments": {"text": "\\\\boxed{4}"}}'
        "</tool_call><|im_end|>\n"
        "<|im_start|>tool\nCorrect.<|im_end|>\n"
        "<|im_start|>assistant\nDone.<|im_end|>\n"
    )
    # Content before the calls, several calls, bare {"name", "arguments"} calls, JSON-string arguments.
    calls = [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": '{"y": 2}'}]
    message = {"role": "assistant", "content": "Let me check.", "tool_calls": calls}
    assert _render(tokenizer, [message]) == (
        "<|im_start|>assistant\nLet me check.\n"
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>\n'
        '<tool_call>{"name": "b", "arguments": {"y": 2}}</tool_call><|im_end|>\n'
    )


def test_tools_are_listed_in_the_system_turn(tokenizer: PreTrainedTokenizerFast) -> None:
    schema = {
        "name": "submit",
        "description": "Send a reply.",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the reply."}},
            "required": ["text"],
        },
        "return": {"type": "string"},
    }
    tools_turn = f"{TOOLS_HEADER}\n{json.dumps(schema)}\n{TOOLS_FOOTER}<|im_end|>\n"
    plain = _render(tokenizer, TOOL_CONVERSATION[1:2], add_generation_prompt=True)
    with_system = _render(tokenizer, TOOL_CONVERSATION[:2], tools=[submit], add_generation_prompt=True)
    assert with_system == "<|im_start|>system\nBe brief.\n\n" + tools_turn + plain
    without_system = _render(tokenizer, TOOL_CONVERSATION[1:2], tools=[submit], add_generation_prompt=True)
    assert without_system == "<|im_start|>system\n" + tools_turn + plain


def test_the_assistant_mask_covers_tool_calls(tokenizer: PreTrainedTokenizerFast) -> None:
    encoded: Any = tokenizer.apply_chat_template(
        TOOL_CONVERSATION, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = encoded["input_ids"], encoded["assistant_masks"]
    produced = tokenizer.decode([i for i, bit in zip(ids, mask, strict=True) if bit])
    assert produced == (
        '<tool_call>{"name": "submit", "arguments": {"text": "\\\\boxed{4}"}}</tool_call><|im_end|>'
        "Done.<|im_end|>"
    )


def test_replies_parse_back_into_content_and_tool_calls(tokenizer: PreTrainedTokenizerFast) -> None:
    prefix = tokenizer.encode(_render(tokenizer, TOOL_CONVERSATION[:2], add_generation_prompt=True))
    rendered = _render(tokenizer, TOOL_CONVERSATION[:3])
    reply = rendered.rsplit("<|im_start|>assistant\n", 1)[1].removesuffix("\n")
    assert tokenizer.parse_response(tokenizer.encode(reply), prefix=prefix) == {
        "role": "assistant",
        "tool_calls": [CALL],
    }  # no content: TRL's parse_response fills in ""
    two = 'Hm.\n<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {"y": [1]}}</tool_call><|im_end|>'
    parsed = tokenizer.parse_response(tokenizer.encode(two), prefix=prefix)
    assert parsed["content"] == "Hm."
    assert [call["function"] for call in parsed["tool_calls"]] == [
        {"name": "a", "arguments": {}},
        {"name": "b", "arguments": {"y": [1]}},
    ]
    plain = tokenizer.parse_response(tokenizer.encode("It is 4.<|im_end|>"), prefix=prefix)
    assert plain == {"role": "assistant", "content": "It is 4."}


def test_trl_accepts_the_template_for_tool_calling(tokenizer: PreTrainedTokenizerFast) -> None:
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    assert supports_tool_calling(tokenizer)
    assert is_chat_template_prefix_preserving(tokenizer)


def test_the_response_template_survives_save_and_reload(
    tokenizer: PreTrainedTokenizerFast, tmp_path: Path
) -> None:
    tokenizer.save_pretrained(tmp_path)
    reloaded: Any = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded.response_template == tokenizer.response_template
    assert _render(reloaded, TOOL_CONVERSATION) == _render(tokenizer, TOOL_CONVERSATION)
