"""Judging a final answer: numbers compared exactly or within a tolerance, text after normalisation.

A number is read from the answer text itself when the text is just a number (``1,234``, ``-0.5``,
``\\boxed{42}``, ``$12``), else from the last number in it. Text is compared after Unicode folding,
lower-casing, and dropping punctuation and the articles *a*, *an*, *the*. A short answer that
contains the expected words in order also counts: up to :data:`TEXT_SLACK_WORDS` other words may
stand around them ("the river Tamsel" or "It is Tamsel." for "Tamsel"), so a wordier but right
answer is not refused. Those words must not name another candidate answer of the task (the
``distractors`` a task gives, such as the other item names of a "which item" question or the other
answers of a document collection), so a list of guesses is refused: "anchor bracket clamp" is wrong
even when the answer is "clamp". Given the question, they must also be filler words or words of the
question, which refuses guesses the task does not list as candidates too.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation, localcontext
from functools import lru_cache
from typing import Literal

AnswerType = Literal["integer", "number", "text"]

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_ARTICLES = frozenset({"a", "an", "the"})
#: Extra words a text answer may have around the expected words.
TEXT_SLACK_WORDS = 3
#: Words that may stand around a text answer's expected words whatever the question (normalised:
#: lower case, no punctuation, so "it's" is "it" and "s").
FILLER_WORDS = frozenset({
    "answer", "final", "is", "it", "s", "was", "are", "be", "i", "think", "believe", "my", "so", "thus",
    "therefore", "called", "named", "name", "of", "in", "on", "at", "to", "this", "that", "which",
})  # fmt: skip
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
    distractors: tuple[str, ...] = (),
    question: str | None = None,
) -> bool:
    """Whether ``answer`` states ``expected`` (or one of its ``aliases`` for text).

    A text answer holds the words of ``expected`` or of an alias, in order, with at most
    :data:`TEXT_SLACK_WORDS` other words, and names none of the ``distractors`` (the task's other
    candidate answers) outside those words. A distractor that reads the same as ``expected`` or an
    alias is ignored; one that lies wholly inside the accepted words ("Sorrel" in "Lake Sorrel") does
    not count. Given the ``question``, each of those other words must also be a filler word
    (:data:`FILLER_WORDS`) or a word of the question ("the river Tamsel" for "Which river ...?"), so
    a list of guesses the task never names ("goat cow sheep" for "sheep") is refused as well. Numbers
    ignore ``distractors`` and ``question``: only the answer's own or last number is read.

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
    accepted = [option for option in map(_words, (expected, *aliases)) if option]
    allowed = FILLER_WORDS | set(_words(question)) if question is not None else None
    if not any(
        len(words) <= len(option) + TEXT_SLACK_WORDS
        and any(
            allowed is None or allowed.issuperset(words[:start] + words[end:])
            for start, end in _occurrences(words, option)
        )
        for option in accepted
    ):
        return False
    # Where the accepted words stand: a distractor found there is part of the right answer.
    spans = [span for option in accepted for span in _occurrences(words, option)]
    for distractor in set(map(_words, distractors)) - set(accepted):
        for start, end in _occurrences(words, distractor):
            if not any(low <= start and end <= high for low, high in spans):
                return False
    return True


def _occurrences(words: list[str], phrase: tuple[str, ...]) -> list[tuple[int, int]]:
    """The ``(start, end)`` word spans where ``phrase`` occurs in ``words``; none for an empty one."""
    span = len(phrase)
    if not span:
        return []
    return [(i, i + span) for i in range(len(words) - span + 1) if tuple(words[i : i + span]) == phrase]


@lru_cache(maxsize=8192)
def _words(text: str) -> tuple[str, ...]:
    """:func:`normalize_text` of a task's own text (expected answers, aliases, distractors), cached."""
    return tuple(normalize_text(text))


def _unbox(text: str) -> str:
    boxed = _BOXED.findall(text)
    return boxed[-1] if boxed else text
