"""Judging a final answer: numbers compared exactly or within a tolerance, text after normalisation.

A number is read from the answer text itself when the text is just a number (``1,234``, ``-0.5``,
``\\boxed{42}``, ``$12``), else from the last number in it. Text is compared after Unicode folding,
lower-casing, and dropping punctuation and the articles *a*, *an*, *the*; a short answer that
contains the expected words in order also counts ("the river Tamsel" for "Tamsel"), so that a
wordier but right answer is not refused while a long list of guesses is.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation, localcontext
from typing import Literal

AnswerType = Literal["integer", "number", "text"]

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_ARTICLES = frozenset({"a", "an", "the"})
#: Extra words a text answer may have around the expected words.
TEXT_SLACK_WORDS = 3
# Numbers are judged with no decimal signal trapped and the widest exponent range: an answer such
# as 1e999999999 would otherwise overflow (or, against a NaN, be an invalid operation) and raise out
# of step, where it is only a wrong answer. Untrapped, a too-large difference is Infinity and any
# comparison with a NaN is False.
_JUDGING = Context(Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])


def parse_number(text: str) -> Decimal | None:
    """The number an answer states, or None."""
    text = _unbox(text).replace("\u2212", "-").strip().rstrip(".").strip().lstrip("$").strip()
    matches = _NUMBER.findall(text)
    if not matches:
        return None
    chosen = text if _NUMBER.fullmatch(text) else matches[-1]
    try:
        return Decimal(chosen.replace(",", ""))
    except InvalidOperation:
        return None


def normalize_text(text: str) -> list[str]:
    """The words of ``text``, folded and lower-cased, without punctuation and articles."""
    folded = unicodedata.normalize("NFKC", _unbox(text)).casefold()
    words = re.sub(r"[^\w]+", " ", folded).split()
    return [word for word in words if word not in _ARTICLES]


def answer_matches(
    answer: str,
    expected: str,
    answer_type: AnswerType,
    *,
    tolerance: float = 0.0,
    aliases: tuple[str, ...] = (),
) -> bool:
    """Whether ``answer`` states ``expected`` (or one of its ``aliases`` for text).

    Never raises a decimal signal, whatever the answer: a number too large to compare, or no
    finite number at all, is simply not a match.
    """
    if answer_type in ("integer", "number"):
        with localcontext(_JUDGING):
            value, target = parse_number(answer), Decimal(expected)
            if value is None or not value.is_finite():
                return False
            if answer_type == "integer" or tolerance == 0:
                return value == target
            return abs(value - target) <= Decimal(repr(tolerance))
    words = normalize_text(answer)
    return any(_contains(words, normalize_text(option)) for option in (expected, *aliases))


def _contains(words: list[str], expected: list[str]) -> bool:
    if not expected or len(words) > len(expected) + TEXT_SLACK_WORDS:
        return False
    span = len(expected)
    return any(words[i : i + span] == expected for i in range(len(words) - span + 1))


def _unbox(text: str) -> str:
    boxed = _BOXED.findall(text)
    return boxed[-1] if boxed else text
