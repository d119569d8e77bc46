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
"""

from __future__ import annotations

ENDOFTEXT = "<|endoftext|>"
"""Document separator; also the padding token, so padding never looks like a turn end."""

IM_START = "<|im_start|>"
"""Opens a turn; followed by the role name and a newline."""

IM_END = "<|im_end|>"
"""Closes a turn; the token at which assistant generation stops."""

SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END)
"""Special tokens in id order: a tokenizer built with them gives ids 0, 1 and 2."""

CHAT_ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

# Whitespace control (`{%-`, `-%}`) strips the template's own line breaks, so only the quoted
# strings reach the output and the rendering is byte-exact.
CHATML_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] -%}"
    "{{- raise_exception('Unknown chat role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}"
    "{{- (message.get('content') or '') + '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- (message.get('content') or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)
"""ChatML Jinja template with ``{% generation %}`` markers around assistant output."""
