"""Recognising a record's format and turning chat and prompt/completion records into examples.

Formats, checked in this order:

* ``"trajectory"``: a :class:`~mrlm.train.rollout.Trajectory`, or a mapping with ``token_ids``
  (see :mod:`mrlm.train.sft.trajectories`);
* ``"chat"``: a mapping with ``messages``, a list of ``{"role", "content"}`` dicts;
* ``"prompt_completion"``: a mapping with ``prompt`` and ``completion``, both strings or both lists
  of messages (the conversational form of TRL's datasets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from mrlm.train.rollout.trajectory import Trajectory
from mrlm.train.sft.chat import MaskMethod, chat_example
from mrlm.train.sft.example import SFTExample, Target

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

RecordFormat = Literal["trajectory", "chat", "prompt_completion"]


def detect_format(record: object, index: int) -> RecordFormat:
    """The format of record ``index``.

    Raises:
        ValueError: the record is not a mapping, or has none of the fields that identify a format,
            or only one of ``prompt`` and ``completion``.
    """
    if isinstance(record, Trajectory):
        return "trajectory"
    if not isinstance(record, Mapping):
        raise ValueError(f"record {index}: expected a mapping (a dict), got {type(record).__name__}")
    if "token_ids" in record:
        return "trajectory"
    if "messages" in record:
        return "chat"
    if "prompt" in record or "completion" in record:
        missing = [name for name in ("prompt", "completion") if name not in record]
        if missing:
            raise ValueError(f"record {index} (prompt/completion): missing field {missing[0]!r}")
        return "prompt_completion"
    raise ValueError(
        f"record {index}: unknown format; expected 'messages', 'prompt' and 'completion', or "
        f"'token_ids' and 'mask', found fields {sorted(map(str, record))}"
    )


def chat_record_example(
    tokenizer: PreTrainedTokenizerBase,
    record: Mapping[str, Any],
    index: int,
    *,
    target: Target,
    method: MaskMethod,
) -> SFTExample:
    """The example of a ``messages`` record.

    Raises:
        ValueError: naming record ``index`` and ``messages``, when they are not a non-empty list of
            messages or the chat template refuses or cannot mask them (see :func:`chat_example`).
    """
    messages = _messages(record["messages"], index, "messages")
    if not messages:
        raise ValueError(f"record {index}: 'messages' is empty")
    try:
        return chat_example(tokenizer, messages, target=target, method=method)
    except ValueError as error:
        raise ValueError(f"record {index}: 'messages': {error}") from error


def prompt_completion_example(
    tokenizer: PreTrainedTokenizerBase,
    record: Mapping[str, Any],
    index: int,
    *,
    target: Target,
    method: MaskMethod,
    add_eos: bool = True,
    fields: tuple[str, str] = ("prompt", "completion"),
) -> SFTExample:
    """The example of a ``prompt``/``completion`` record; the loss never touches the prompt.

    Strings: ``encode(prompt)`` (with the tokenizer's special tokens, a bos say) followed by
    ``encode(completion)`` (without) and, with ``add_eos``, the eos token, so the model learns to
    stop. The two are tokenized apart, exactly as a model prompted with the prompt would produce
    the completion. The loss is on the completion and the eos; only ``target="assistant"`` applies.

    Message lists: the conversation ``prompt + completion`` is masked like a chat record, with the
    prompt's messages as context only.

    ``fields`` names the two values in error messages (a preference record passes its own).

    Raises:
        ValueError: naming record ``index`` and the field, when a value is malformed or the chat
            template refuses or cannot mask the conversation (see :func:`chat_example`).
    """
    prompt, completion = record["prompt"], record["completion"]
    if isinstance(prompt, str) and isinstance(completion, str):
        if target != "assistant":
            raise ValueError(
                f"record {index} (prompt/completion): string records have no environment turns, so "
                f"target={target!r} does not apply"
            )
        prompt_ids = list(tokenizer.encode(prompt, add_special_tokens=True))
        completion_ids = list(tokenizer.encode(completion, add_special_tokens=False))
        eos = tokenizer.eos_token_id
        if add_eos and isinstance(eos, int) and (not completion_ids or completion_ids[-1] != eos):
            completion_ids.append(eos)
        return SFTExample(prompt_ids + completion_ids, [0] * len(prompt_ids) + [1] * len(completion_ids))
    if isinstance(prompt, str) or isinstance(completion, str):
        raise ValueError(
            f"record {index} (prompt/completion): prompt and completion must both be strings or both "
            f"lists of messages, got {type(prompt).__name__} and {type(completion).__name__}"
        )
    prompt_field, completion_field = fields
    messages = [*_messages(prompt, index, prompt_field), *_messages(completion, index, completion_field)]
    if not messages:
        raise ValueError(f"record {index} (prompt/completion): prompt and completion are both empty")
    try:
        return chat_example(
            tokenizer, messages, target=target, first_target_message=len(prompt), method=method
        )
    except ValueError as error:  # about the whole conversation, so both fields are named
        raise ValueError(
            f"record {index} (prompt/completion): {prompt_field!r} + {completion_field!r}: {error}"
        ) from error


def _messages(value: object, index: int, field: str) -> list[Mapping[str, Any]]:
    """``value`` checked to be a list of messages with string roles."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValueError(f"record {index}: {field!r} must be a list of messages, got {type(value).__name__}")
    for k, message in enumerate(value):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError(f"record {index}: {field}[{k}] must be a mapping with a string 'role'")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(
                f"record {index}: {field}[{k}] content must be a string, got {type(content).__name__}"
            )
    return list(value)
