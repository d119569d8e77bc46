"""Text helpers for debates: cleaning model output, words, content words, marker phrases, overlap.

Everything here is pure, deterministic and linear in the length of its input, so hostile replies
(megabytes, control characters, one word repeated) cost little and never raise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Control characters (C0 and C1, except tab and newline) and lone surrogates. Surrogates cannot be
#: encoded as UTF-8, so printing or sending them to a judge would fail far from their source.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_BLANK_LINES = re.compile(r"\n{3,}")
_WORD = re.compile(r"[^\W\d_]+")  # runs of letters, in any script

CLIP_MARK = " [...]"


def clean_turn(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` made safe to show and judge; returns it and whether it was clipped.

    Carriage returns become newlines, control characters (but tab and newline) and lone surrogates are
    dropped, runs of blank lines shrink to one, and the ends are stripped. Text longer than
    ``max_chars`` is cut there and marked with ``CLIP_MARK``.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _UNPRINTABLE.sub("", text)
    text = _BLANK_LINES.sub("\n\n", text).strip()
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars].rstrip() + CLIP_MARK, True


def words(text: str) -> list[str]:
    """Lower-case words (runs of letters), in order; digits, punctuation and spaces split them."""
    return _WORD.findall(text.lower())


#: Function words, signposts, and words every motion or debate shares: they say nothing about the subject.
STOPWORDS = frozenset(
    words(
        """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who whom why will
    with would you your yours yourself yourselves ought must may might shall let lets yes rather every
    many much one two instead less new make made become becomes good bad better worse
    motion house side sides debate argue argues argued argument arguments opponent opponents
    think believe say said says pro con people thing things way ways therefore however moreover
    furthermore thus hence since first second third finally example instance
        """
    )
)


def stem(word: str) -> str:
    """A light suffix strip so that plural and verb forms meet (``cities`` -> ``city``, ``taxes`` -> ``tax``)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> frozenset[str]:
    """Stems of the words that carry meaning: three letters or more and not in ``STOPWORDS``."""
    stems = (stem(w) for w in words(text) if len(w) >= 3 and w not in STOPWORDS)
    return frozenset(s for s in stems if s not in STOPWORDS)  # "believes" -> "believe", a stopword


def phrase_pattern(phrases: str) -> re.Pattern[str]:
    """A pattern matching any of the ``|``-separated ``phrases`` as whole words, any spacing between words."""
    normalised = {" ".join(p.lower().split()) for p in phrases.split("|")} - {""}
    alternatives = sorted(normalised, key=lambda p: (-len(p), p))  # longest first, so it wins
    body = "|".join(r"\s+".join(re.escape(part) for part in p.split()) for p in alternatives)
    return re.compile(rf"(?<![a-z0-9])(?:{body})(?![a-z0-9])")


def distinct_matches(pattern: re.Pattern[str], text: str) -> frozenset[str]:
    """The different phrases of ``pattern`` found in ``text`` (case-insensitive, spacing normalised)."""
    return frozenset(" ".join(match.split()) for match in pattern.findall(text.lower()))


def shingles(tokens: Sequence[str], size: int = 3) -> frozenset[tuple[str, ...]]:
    """The set of ``size``-word windows of ``tokens`` (the words themselves when there are fewer)."""
    if len(tokens) < size:
        return frozenset((token,) for token in tokens)
    return frozenset(tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1))


def jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """``|a & b| / |a | b|``; 0.0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0
