"""Growing a chat's token ids turn by turn, never re-tokenizing what is already there.

Re-rendering and re-tokenizing the whole conversation at every turn can tokenize an earlier reply
differently from how it was sampled (BPE merges across the boundary, normalisation, a template that
trims whitespace): the logprobs recorded at sampling time would then sit on other tokens. So the
sampled ids of a reply are kept as they are, and the text the chat template adds between turns is
found by rendering the conversation with and without the new turn and taking the string suffix.

This relies on the template's prefix property: rendering a conversation extended by a turn starts
with the rendering of the conversation before it. ChatML and most chat templates have it; one that
rewrites earlier turns (for example dropping the reasoning of earlier replies) raises
:class:`TemplatePrefixError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

# Stands in for a reply's content when locating the markup a template puts around it: a template
# may trim or reformat real content, but leaves this plain word alone.
_CONTENT_PROBE = "MRLMREPLYPROBE"


@lru_cache(maxsize=256)
def _cached_opening(tokenizer: Any, template: object, turns: tuple[tuple[str, str], ...]) -> tuple[int, ...]:
    messages = [{"role": role, "content": content} for role, content in turns]
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tuple(tokenizer.encode(str(rendered), add_special_tokens=False))


def _opening_ids(tokenizer: Any, messages: Sequence[Mapping[str, str]]) -> list[int] | None:
    """The opening turns' ids, rendered once for all the episodes that open alike (every member of
    a group does: rendering a template costs more than the rest of starting an episode); None
    where the turns carry more than role and content, or the tokenizer cannot be a cache key."""
    if any(set(message) != {"role", "content"} for message in messages):
        return None
    turns = tuple((message["role"], message["content"]) for message in messages)
    try:
        return list(_cached_opening(tokenizer, getattr(tokenizer, "chat_template", None), turns))
    except TypeError:  # unhashable
        return None


class TemplatePrefixError(ValueError):
    """The chat template does not render conversations incrementally (see the module docstring)."""


class Conversation:
    """The token ids, generation mask and logprobs of one chat, built turn by turn.

    Starts from the opening messages (system and/or user) rendered with the generation prompt; then
    alternates :meth:`add_reply` (sampled ids, mask 1) and :meth:`add_user` (template text and the
    env's observation, mask 0). The ids always end where the model generates next, or after the
    last reply; the template's closing markup of that reply is added with the next user turn.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        messages: the opening turns, ``{"role", "content"}`` dicts, the last one a user turn.
    """

    def __init__(self, tokenizer: Any, messages: Sequence[Mapping[str, str]]) -> None:
        if not messages or messages[-1]["role"] != "user":
            raise ValueError("a conversation opens with a user turn last (optionally after a system turn)")
        self.tokenizer = tokenizer
        self.messages: list[dict[str, str]] = [dict(m) for m in messages]
        opening = _opening_ids(tokenizer, messages)
        self.token_ids: list[int] = (
            opening
            if opening is not None
            else self._encode(self._render(self.messages, generation_prompt=True))
        )
        self.mask: list[int] = [0] * len(self.token_ids)
        self.logprobs: list[float] = [0.0] * len(self.token_ids)
        # Text of the stop token that ended the last reply, which the template's markup also opens with.
        self._stop_text: str | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    def copy(self) -> Conversation:
        """An independent copy sharing the tokenizer: extending one leaves the other as it was.

        Rollouts fork a conversation to try several replies from the same state.
        """
        twin = Conversation.__new__(Conversation)
        twin.tokenizer = self.tokenizer
        twin.messages = [dict(m) for m in self.messages]
        twin.token_ids = list(self.token_ids)
        twin.mask = list(self.mask)
        twin.logprobs = list(self.logprobs)
        twin._stop_text = self._stop_text
        return twin

    def add_reply(self, token_ids: Sequence[int], logprobs: Sequence[float], stopped: bool) -> str:
        """Append a sampled reply and return its text (what the env receives).

        Args:
            token_ids: the generated ids, ending with the stop token when ``stopped``.
            logprobs: their log-probs at sampling time.
            stopped: True when the last id is a stop token: it is kept in the ids (mask 1) but not in
                the text.

        Returns:
            The reply decoded without special tokens, also appended as the assistant message.
        """
        if self.messages[-1]["role"] == "assistant":
            raise ValueError("add_reply after add_reply: the env's turn (add_user) comes in between")
        if len(token_ids) != len(logprobs):
            raise ValueError(f"{len(token_ids)} reply tokens but {len(logprobs)} logprobs")
        content_ids = list(token_ids[:-1]) if stopped and token_ids else list(token_ids)
        content = self.tokenizer.decode(
            content_ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        self._stop_text = (
            self.tokenizer.decode([token_ids[-1]], skip_special_tokens=False)
            if stopped and token_ids
            else None
        )
        self.token_ids += list(token_ids)
        self.mask += [1] * len(token_ids)
        self.logprobs += [float(x) for x in logprobs]
        self.messages.append({"role": "assistant", "content": content})
        return content

    def add_user(self, content: str, max_tokens: int | None = None) -> bool:
        """Close the last reply as the template does and append a user turn and the generation prompt.

        Returns False, changing nothing, when the result would exceed ``max_tokens`` tokens.

        Raises:
            TemplatePrefixError: the template's renderings are not extensions of each other.
        """
        if self.messages[-1]["role"] != "assistant":
            raise ValueError("add_user needs a reply first (add_reply)")
        text = self._closing_markup() + self._user_markup(content)
        ids = self._encode(text)
        if max_tokens is not None and len(self.token_ids) + len(ids) > max_tokens:
            return False
        self.token_ids += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.messages.append({"role": "user", "content": content})
        self._stop_text = None
        return True

    def _closing_markup(self) -> str:
        """What the template writes after the last reply's content that the model did not generate."""
        before = self.messages[:-1]
        prompt = self._render(before, generation_prompt=True)
        probe = self._render([*before, {"role": "assistant", "content": _CONTENT_PROBE}])
        turn = _suffix(prompt, probe, "an assistant turn")
        start = turn.find(_CONTENT_PROBE)
        if start != 0:
            raise TemplatePrefixError(
                "the chat template renders an assistant turn differently from its generation prompt "
                f"(text before the reply: {turn[: max(start, 0)]!r}); incremental tokenization needs them equal"
            )
        closing = turn[len(_CONTENT_PROBE) :]
        # The reply's own stop token usually is the template's end of turn: it was generated already.
        if self._stop_text and closing.startswith(self._stop_text):
            closing = closing[len(self._stop_text) :]
        return closing

    def _user_markup(self, content: str) -> str:
        """The text the template adds for a new user turn and the next generation prompt."""
        without = self._render(self.messages)
        with_user = self._render(
            [*self.messages, {"role": "user", "content": content}], generation_prompt=True
        )
        return _suffix(without, with_user, "a user turn")

    def _render(self, messages: Sequence[Mapping[str, str]], generation_prompt: bool = False) -> str:
        rendered = self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt
        )
        return str(rendered)

    def _encode(self, text: str) -> list[int]:
        # The rendering already holds any special tokens the template wants (a bos, say).
        return list(self.tokenizer.encode(text, add_special_tokens=False))


def _suffix(shorter: str, longer: str, what: str) -> str:
    if not longer.startswith(shorter):
        raise TemplatePrefixError(
            f"adding {what} changed the rendering of the earlier turns, so the conversation cannot be "
            "tokenized incrementally; use a chat template whose renderings extend each other"
        )
    return longer[len(shorter) :]
