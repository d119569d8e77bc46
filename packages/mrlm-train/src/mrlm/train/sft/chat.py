"""Loss masks of chat conversations: the assistant's replies, the environment's turns, or both.

The conversation is rendered with the tokenizer's chat template and tokenized once, as
``apply_chat_template`` does. The assistant's tokens are found one of two ways:

* ``"markers"``: the template's ``{% generation %}`` blocks, through
  ``apply_chat_template(..., return_assistant_tokens_mask=True)``;
* ``"prefix"``: for templates without markers. Each assistant turn's text is located by rendering
  the conversation up to it with ``add_generation_prompt=True``: what follows that prefix in the
  full rendering is the reply's content, then the template's closing markup, of which only the
  tokenizer's eos token (when the markup starts with it) is the model's, since it is where
  generation stops. This relies on the template's prefix property (see
  :mod:`mrlm.train.rollout.conversation`) and on the template writing the content unchanged.

Both mark exactly the reply content and the eos token for a ChatML template.

Environment turns are what the model did not write after the opening prompt: every token between
the end of one reply and the start of the next (the template's closing markup of the reply, the
environment's turn, and the next generation prompt), plus the tokens after the last reply when
non-assistant messages follow it. Trained on those, a model learns to continue a conversation as
the environment would, up to the point where the policy takes over again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mrlm.train.rollout.conversation import TemplatePrefixError
from mrlm.train.sft.example import SFTExample, Target

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

MaskMethod = Literal["auto", "markers", "prefix"]
"""How assistant tokens are found: ``"auto"`` uses the markers when the template has them."""

_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")


def _template_errors() -> tuple[type[Exception], ...]:
    """What rendering a chat template raises for a conversation it refuses (``raise_exception``
    with an unknown role, say): jinja2's TemplateError; nothing when jinja2, which transformers
    needs to render any template, is not installed."""
    try:
        from jinja2 import TemplateError
    except ImportError:
        return ()
    return (TemplateError,)


_TEMPLATE_ERRORS = _template_errors()

Span = tuple[int, int]
"""A half-open token range ``[start, end)``."""


def has_generation_markers(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's chat template wraps assistant output in ``{% generation %}`` blocks."""
    template = tokenizer.chat_template
    return isinstance(template, str) and _GENERATION_TAG.search(template) is not None


def chat_example(
    tokenizer: PreTrainedTokenizerBase,
    messages: Sequence[Mapping[str, Any]],
    *,
    target: Target = "assistant",
    first_target_message: int = 0,
    method: MaskMethod = "auto",
) -> SFTExample:
    """Tokenize a conversation and mark the tokens the loss applies to.

    Args:
        tokenizer: a tokenizer with a chat template (a fast tokenizer for ``"prefix"``).
        messages: ``{"role", "content"}`` dicts in order.
        target: ``"assistant"`` marks each reply's tokens (content and eos); ``"environment"`` the
            environment's turns after the first reply (see the module docstring); ``"both"`` the union.
        first_target_message: messages before this index are context only, never targets (the
            prompt of a prompt/completion record).
        method: how assistant tokens are found (module docstring).

    Returns:
        The example; its mask may be all zero (no reply, say), which callers must check.

    Raises:
        ValueError: the template refuses the conversation (its error message quoted), its markers
            do not give one span per assistant message, or (prefix method) it does not render
            incrementally or rewrites the content.
    """
    use_markers = method == "markers" or (method == "auto" and has_generation_markers(tokenizer))
    try:
        input_ids, spans = (
            _assistant_spans_by_markers(tokenizer, messages)
            if use_markers
            else _assistant_spans_by_prefix(tokenizer, messages)
        )
    except _TEMPLATE_ERRORS as error:
        raise ValueError(f"the chat template refused the conversation: {error}") from error
    replies = [k for k, message in enumerate(messages) if message["role"] == "assistant"]
    labels = [0] * len(input_ids)
    if target in ("assistant", "both"):
        for k, (start, end) in zip(replies, spans, strict=True):
            if k >= first_target_message:
                labels[start:end] = [1] * (end - start)
    if target in ("environment", "both"):
        for j, (k, (_, end)) in enumerate(zip(replies, spans, strict=True)):
            last = j + 1 == len(replies)
            next_reply = len(messages) if last else replies[j + 1]
            # A gap holds an environment turn only when some message sits between the two replies.
            if next_reply - k > 1 and next_reply - 1 >= first_target_message:
                gap_end = len(input_ids) if last else spans[j + 1][0]
                labels[end:gap_end] = [1] * (gap_end - end)
    return SFTExample(input_ids, labels)


def _assistant_spans_by_markers(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[Mapping[str, Any]]
) -> tuple[list[int], list[Span]]:
    encoded = tokenizer.apply_chat_template(
        [dict(m) for m in messages], tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    assert not isinstance(encoded, (str, list))  # return_dict=True gives a BatchEncoding
    input_ids = [int(i) for i in encoded["input_ids"]]
    spans = _runs(encoded["assistant_masks"])
    expected = sum(1 for m in messages if m["role"] == "assistant")
    if len(spans) != expected:
        raise ValueError(
            f"the chat template's generation markers give {len(spans)} spans for {expected} assistant "
            "messages; use method='prefix'"
        )
    return input_ids, spans


def _assistant_spans_by_prefix(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[Mapping[str, Any]]
) -> tuple[list[int], list[Span]]:
    full = _render(tokenizer, messages)
    char_spans: list[Span] = []
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise ValueError(
                f"message {k}: the prefix method needs string content, got {type(content).__name__}"
            )
        prompt = _render(tokenizer, messages[:k], generation_prompt=True)
        turn = _render(tokenizer, messages[: k + 1])
        if not (turn.startswith(prompt) and full.startswith(turn)):
            raise TemplatePrefixError(
                f"message {k}: the chat template's renderings do not extend each other, so assistant "
                "turns cannot be located; use a template with {% generation %} markers"
            )
        reply = turn[len(prompt) :]
        if not reply.startswith(content):
            raise ValueError(
                f"message {k}: the chat template does not write the assistant content as is right after "
                "the generation prompt; use a template with {% generation %} markers"
            )
        end = len(prompt) + len(content)
        eos = tokenizer.eos_token
        if isinstance(eos, str) and eos and reply[len(content) :].startswith(eos):
            end += len(eos)
        char_spans.append((len(prompt), end))

    encoded = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    input_ids = [int(i) for i in encoded["input_ids"]]
    offsets: list[tuple[int, int]] = encoded["offset_mapping"]
    spans: list[Span] = []
    for char_start, char_end in char_spans:
        # A token belongs to the reply when its characters overlap the reply's, as with the markers.
        inside = [t for t, (s, e) in enumerate(offsets) if s < char_end and e > char_start]
        spans.append((inside[0], inside[-1] + 1) if inside else _empty_span_at(offsets, char_start))
    return input_ids, spans


def _empty_span_at(offsets: Sequence[tuple[int, int]], char: int) -> Span:
    """An empty span at the first token starting at or after ``char`` (a reply with no text)."""
    token = next((t for t, (s, _) in enumerate(offsets) if s >= char), len(offsets))
    return token, token


def _render(
    tokenizer: PreTrainedTokenizerBase,
    messages: Sequence[Mapping[str, Any]],
    *,
    generation_prompt: bool = False,
) -> str:
    rendered = tokenizer.apply_chat_template(
        [dict(m) for m in messages], tokenize=False, add_generation_prompt=generation_prompt
    )
    return str(rendered)


def _runs(mask: Sequence[int]) -> list[Span]:
    """The maximal runs of 1s in ``mask``, in order."""
    runs: list[Span] = []
    start: int | None = None
    for t, value in enumerate([*mask, 0]):
        if value and start is None:
            start = t
        elif not value and start is not None:
            runs.append((start, t))
            start = None
    return runs
