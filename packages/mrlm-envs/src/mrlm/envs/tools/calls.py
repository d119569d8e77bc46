"""The tool-call protocol: finding calls in a reply, and writing tool results back.

A call is a JSON object inside a ``<tool_call>`` block, the format Hermes- and Qwen-style chat
templates produce::

    <tool_call>{"name": "calculator", "arguments": {"expression": "2^10"}}</tool_call>

``arguments`` may also be a JSON string holding the object (the OpenAI wire form), and may be left
out for a tool without required arguments. Each call's result comes back as one block, in call order::

    <tool_response>{"name": "calculator", "content": "1024"}</tool_response>
    <tool_response>{"name": "search", "error": "invalid arguments: ..."}</tool_response>

Results are JSON with ``"</"`` written ``"<\\/"`` (the same string to a JSON reader), so no result
can close its own block. A reply without any ``<tool_call>`` tag is the agent's final answer: the text
of its last ``<answer>...</answer>`` block, or the whole reply when it has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

OPEN_TAG, CLOSE_TAG = "<tool_call>", "</tool_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"

#: Calls run from one reply; the rest are refused.
DEFAULT_MAX_CALLS_PER_REPLY = 4

#: Longest call block, in characters (the JSON between the tags).
DEFAULT_MAX_CALL_CHARS = 12_000


@dataclass(frozen=True)
class ParsedCall:
    """One ``<tool_call>`` block of a reply.

    Attributes:
        name: the tool named, when the block could be read.
        arguments: the arguments object, when the block could be read.
        error: why the block cannot be run (bad JSON, missing name, too long, one call too many);
            None for a well-formed call. Whether the tool exists and the arguments fit its schema is
            checked later, by the registry.
    """

    name: str | None
    arguments: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def has_tool_call(reply: str) -> bool:
    """Whether the reply tries to call a tool (well-formed or not)."""
    return OPEN_TAG in reply


def parse_tool_calls(
    reply: str,
    *,
    max_calls: int = DEFAULT_MAX_CALLS_PER_REPLY,
    max_call_chars: int = DEFAULT_MAX_CALL_CHARS,
) -> list[ParsedCall]:
    """The call blocks of ``reply``, in order, at most ``max_calls`` of them read.

    Blocks past ``max_calls`` are not read; together they come back as one refused call, so that a
    reply full of calls costs one error, not thousands. An opening tag never closed counts as one
    malformed call.
    """
    calls: list[ParsedCall] = []
    skipped = 0
    position = 0
    # A scan with str.find rather than a lazy regex: a reply of many unclosed tags stays linear.
    while (start := reply.find(OPEN_TAG, position)) != -1:
        end = reply.find(CLOSE_TAG, start + len(OPEN_TAG))
        if end == -1:
            calls.append(ParsedCall(None, None, f"a {OPEN_TAG} block is not closed with {CLOSE_TAG}"))
            break
        if len(calls) < max_calls:
            calls.append(_parse_block(reply[start + len(OPEN_TAG) : end], max_call_chars))
        else:
            skipped += 1
        position = end + len(CLOSE_TAG)
    if skipped:
        calls.append(
            ParsedCall(
                None,
                None,
                f"too many tool calls in one reply (at most {max_calls}); {skipped} more were not run",
            )
        )
    return calls


def _parse_block(text: str, max_chars: int) -> ParsedCall:
    text = text.strip()
    if len(text) > max_chars:
        return ParsedCall(
            None, None, f"the tool call is too long ({len(text)} characters; at most {max_chars})"
        )
    try:
        payload = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        return ParsedCall(None, None, f"the tool call is not valid JSON ({_reason(error)})")
    if not isinstance(payload, dict):
        return ParsedCall(None, None, 'the tool call must be a JSON object {"name": ..., "arguments": {...}}')
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return ParsedCall(None, None, 'the tool call needs a "name" string')
    extra = sorted(set(payload) - {"name", "arguments"})
    if extra:
        return ParsedCall(
            name, None, f'the tool call has unexpected keys {extra[:5]} (only "name" and "arguments")'
        )
    arguments = payload.get("arguments", {})
    if isinstance(arguments, str):  # the OpenAI wire form: arguments as a JSON string
        try:
            arguments = json.loads(arguments, parse_constant=_refuse_constant) if arguments.strip() else {}
        except (ValueError, RecursionError) as error:
            return ParsedCall(
                name, None, f'"arguments" is a string that is not valid JSON ({_reason(error)})'
            )
    if not isinstance(arguments, dict):
        return ParsedCall(name, None, '"arguments" must be a JSON object')
    return ParsedCall(name, arguments)


def _refuse_constant(token: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON; a tool should never see them.
    raise ValueError(f"{token} is not allowed")


def _reason(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error).splitlines()[0][:120]


def format_tool_response(name: str | None, content: str, *, ok: bool) -> str:
    """One result block: ``<tool_response>{"name": ..., "content" | "error": ...}</tool_response>``.

    ``name`` is None when the call could not be read far enough to know it.
    """
    key = "content" if ok else "error"
    # "</" is written "<\/" (the same JSON string) so that a result cannot close its own block.
    payload = json.dumps({"name": name, key: content}, ensure_ascii=False).replace("</", "<\\/")
    return f"{RESPONSE_OPEN}{payload}{RESPONSE_CLOSE}"


def extract_final_answer(reply: str) -> str:
    """The answer of a reply without tool calls: its last ``<answer>`` block, else the whole reply."""
    end = reply.rfind(ANSWER_CLOSE)
    start = reply.rfind(ANSWER_OPEN, 0, end) if end != -1 else -1
    if start == -1:
        return reply.strip()
    return reply[start + len(ANSWER_OPEN) : end].strip()


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """One call block, as an agent writes it."""
    return f"{OPEN_TAG}{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}{CLOSE_TAG}"


def parse_tool_responses(observation: str) -> list[dict[str, Any]]:
    """The result blocks of an observation, each ``{"name", "content"}`` or ``{"name", "error"}``."""
    responses = []
    position = 0
    while (start := observation.find(RESPONSE_OPEN, position)) != -1:
        end = observation.find(RESPONSE_CLOSE, start)
        if end == -1:
            break
        responses.append(json.loads(observation[start + len(RESPONSE_OPEN) : end]))
        position = end + len(RESPONSE_CLOSE)
    return responses
