"""ChatML markup shared by the tiny tokenizer and anything that renders conversations for it.

A conversation renders as::

    <|im_start|>system
    You are helpful.<|im_end|>
    <|im_start|>user
    Hi<|im_end|>
    <|im_start|>assistant
    Hello!<|im_end|>

Contract of ``CHATML_TEMPLATE``:

* roles are ``system``, ``user``, ``assistant`` and ``tool``; any other role raises an error;
* ``content`` is a string (a missing content renders as the empty string);
* every turn ends with ``<|im_end|>`` followed by a newline;
* ``add_generation_prompt=True`` appends ``<|im_start|>assistant\\n`` so the model writes the next
  assistant turn and ends it with ``<|im_end|>``, the generation stop token;
* the assistant content *and* its ``<|im_end|>`` sit inside ``{% generation %}`` markers, so
  ``apply_chat_template(..., return_assistant_tokens_mask=True)`` marks exactly the tokens a policy
  produced (the newline after ``<|im_end|>`` is markup, not model output).

Tool calling, in the format of ``mrlm/ToolUse-v0``, renders only when a conversation uses it, so plain
conversations render exactly as above:

* an assistant message's ``tool_calls`` (``{"type": "function", "function": {"name", "arguments"}}``
  or the bare ``{"name", "arguments"}``) follow its content, each as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, a newline between two, all inside the
  generation markers before ``<|im_end|>``;
* a ``tool`` message renders like any other turn: ``<|im_start|>tool\n<result><|im_end|>\n``;
* ``apply_chat_template(..., tools=[...])`` lists the tools' JSON schemas in the system turn (after
  the conversation's own system message, or in a system turn of their own).

``RESPONSE_TEMPLATE`` parses a sampled reply back into ``content`` and ``tool_calls``
(``tokenizer.parse_response``), which trainers that run tools, such as TRL's, rely on.
"""

from __future__ import annotations

from typing import Any

ENDOFTEXT = "<|endoftext|>"
"""Document separator; also the padding token, so padding never looks like a turn end."""

IM_START = "<|im_start|>"
"""Opens a turn; followed by the role name and a newline."""

IM_END = "<|im_end|>"
"""Closes a turn; the token at which assistant generation stops."""

SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END)
"""Special tokens in id order: a tokenizer built with them gives ids 0, 1 and 2."""

CHAT_ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

TOOLS_HEADER = "You can call these tools:"
"""Opens the list of tool schemas in the system turn; each schema follows on a line of its own."""

TOOLS_FOOTER = 'To call one, write <tool_call>{"name": "<tool>", "arguments": {<arguments>}}</tool_call>.'
"""Closes the list of tool schemas: how a call is written."""

# Whitespace control (`{%-`, `-%}`) strips the template's own line breaks, so only the quoted
# strings reach the output and the rendering is byte-exact.
CHATML_TEMPLATE = (
    "{%- if tools -%}"
    "{{- '<|im_start|>system\\n' -}}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{{- (messages[0].get('content') or '') + '\\n\\n' -}}"
    "{%- endif -%}"
    "{{- '" + TOOLS_HEADER + "' -}}"
    "{%- for tool in tools -%}"
    "{{- '\\n' + ((tool.function if tool.function is defined else tool) | tojson) -}}"
    "{%- endfor -%}"
    "{{- '\\n" + TOOLS_FOOTER + "<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] -%}"
    "{{- raise_exception('Unknown chat role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{%- if tools and loop.first and message['role'] == 'system' -%}"
    # already rendered above, with the tools
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- generation -%}"
    "{%- if message.get('tool_calls') -%}"
    "{{- message.get('content') or '' -}}"
    "{%- for call in message['tool_calls'] -%}"
    "{%- set function = call.function if call.function is defined else call -%}"
    "{%- if not loop.first or message.get('content') -%}"
    "{{- '\\n' -}}"
    "{%- endif -%}"
    "{%- set arguments = function.arguments if function.arguments is defined else {} -%}"
    "{{- '<tool_call>{\"name\": ' + (function.name | tojson) + ', \"arguments\": ' -}}"
    "{{- (arguments if arguments is string else (arguments | tojson)) + '}</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>' -}}"
    "{%- else -%}"
    "{{- (message.get('content') or '') + '<|im_end|>' -}}"
    "{%- endif -%}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{{- (message.get('content') or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)
"""ChatML Jinja template with ``{% generation %}`` markers around assistant output and tool calls."""

RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": IM_START + "assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
"""How ``tokenizer.parse_response`` reads a reply rendered by ``CHATML_TEMPLATE`` (transformers'
response-template format): text up to ``<|im_end|>`` is the content, each ``<tool_call>`` block's JSON
a call."""
