"""Find the final answer in free-form model text.

Work is bounded whatever the reply: only the last :data:`ANSWER_WINDOW` characters are examined (a final
answer is stated at the end of a reply, and a reply may be as long as the action space allows), at most
:data:`MAX_BOXED_TRIES` ``\\boxed{`` openings are scanned, and every pattern is linear in the window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: Characters at the end of a reply that extraction examines.
ANSWER_WINDOW = 8_000

#: ``\boxed{`` openings tried, from the last one back, before giving up on unbalanced braces.
MAX_BOXED_TRIES = 16

AnswerSource = Literal["boxed", "hashes", "answer_is", "last_number"]

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BRACE = re.compile(r"[{}]")
_HASHES = re.compile(r"####[ \t]*([^\n]*)")
_ANSWER_IS = re.compile(r"answer\s*(?:is|:|=)[\s:*]*([^\n]*)", re.IGNORECASE)
_LAST_NUMBER = re.compile(r"-?(?:[0-9][0-9,]*(?:\.[0-9]+)?|\.[0-9]+)(?:\s*/\s*-?[0-9]+)?")


@dataclass(frozen=True)
class Extraction:
    """The final answer found in a reply.

    Attributes:
        answer: the answer text (stripped of ``$`` delimiters and a final period), or None.
        source: where it was found: the last ``\\boxed{}``, a ``#### ...`` line, an "answer is ..."
            phrase, or the last number of the reply; None when nothing was found.
    """

    answer: str | None
    source: AnswerSource | None


def extract(text: str, *, window: int | None = ANSWER_WINDOW) -> Extraction:
    """The final answer stated in ``text``.

    Looks, in order of preference, at the last ``\\boxed{...}`` (nested braces allowed; ``\\fbox``
    too), the last ``#### ...`` line, the last "answer is ..." / "answer: ..." phrase, then the last
    number. Only the last ``window`` characters are examined (all of them when ``window`` is None).
    """
    if window is not None and len(text) > window:
        text = text[-window:]
    boxed = last_boxed(text)
    if boxed is not None:
        found = _found(boxed, "boxed")
        if found.answer is not None:
            return found
    for pattern, source in ((_HASHES, "hashes"), (_ANSWER_IS, "answer_is")):
        last = None
        for last in pattern.finditer(text):  # noqa: B007 (only the last match counts)
            pass
        if last is not None:
            found = _found(last.group(1), source)  # type: ignore[arg-type]
            if found.answer is not None:
                return found
    number = None
    for number in _LAST_NUMBER.finditer(text):  # noqa: B007
        pass
    if number is not None:
        return _found(number.group(0).rstrip(","), "last_number")
    return Extraction(None, None)


def extract_answer(text: str, *, window: int | None = ANSWER_WINDOW) -> str | None:
    """The answer text of :func:`extract`, or None."""
    return extract(text, window=window).answer


def last_boxed(text: str, *, max_tries: int = MAX_BOXED_TRIES) -> str | None:
    """The content of the last ``\\boxed{...}`` whose braces balance, or None.

    Openings are tried from the last one back, at most ``max_tries`` of them, so a reply ending in an
    unclosed ``\\boxed{`` still yields an earlier complete one while ``\\boxed{`` spam stays cheap.
    """
    starts = [match.end() for match in _BOXED.finditer(text)]
    for start in reversed(starts[-max_tries:]):
        depth = 1
        for brace in _BRACE.finditer(text, start):
            depth += 1 if brace.group() == "{" else -1
            if depth == 0:
                return text[start : brace.start()]
    return None


def _found(raw: str, source: AnswerSource) -> Extraction:
    answer = raw.strip().strip("*").strip().rstrip(".").strip()
    if answer.startswith("$") and answer.endswith("$"):
        answer = answer.strip("$").strip().rstrip(".").strip()
    return Extraction(answer or None, source if answer else None)
