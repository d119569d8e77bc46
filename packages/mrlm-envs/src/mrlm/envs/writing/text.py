"""Splitting text into words and tokens: the units every writing metric counts.

Two splits serve two purposes:

* :func:`count_words` counts words as a reader would, for length bands: runs of Unicode letters and
  digits, joined by an inner apostrophe, hyphen or dot (``don't``, ``state-of-the-art`` and ``3.5``
  are one word each).
* :func:`tokens` is the tokenisation of Google's ``rouge-score`` package without stemming, so that
  ROUGE values agree with it exactly: lowercase, every character outside ``[a-z0-9]`` becomes a
  separator. Accented and non-Latin letters are therefore separators too (``café`` gives ``caf``);
  the diversity, overlap and coherence metrics use the same tokens so that all scores see one text.

:func:`content_words` drops common English function words, so that overlap and coherence measure
shared subject matter rather than shared grammar.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Inner joiners: apostrophe (straight or typographic U+2019), dot, hyphen.
_WORD = re.compile("[^\\W_]+(?:['\u2019.\\-][^\\W_]+)*")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")

_FUNCTION_WORDS = """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t d ll m re ve don doesn didn isn
    wasn aren weren won wouldn shouldn couldn can cannot let us get got one may might must shall
"""

#: Function words ignored by the content-word metrics (a short list, written for this package).
STOPWORDS: frozenset[str] = frozenset(_FUNCTION_WORDS.split())


def count_words(text: str) -> int:
    """Words in ``text`` as a reader counts them (see the module docstring)."""
    return sum(1 for _ in _WORD.finditer(text))


def tokens(text: str) -> list[str]:
    """``rouge-score``'s default tokens: lowercase alphanumeric ASCII runs, in order."""
    return _NOT_ALNUM.sub(" ", text.lower()).split()


def content_words(toks: Iterable[str]) -> list[str]:
    """The tokens that are not function words (:data:`STOPWORDS`), in order, repeats kept."""
    return [tok for tok in toks if tok not in STOPWORDS]


def ngrams(toks: list[str], n: int) -> list[tuple[str, ...]]:
    """The ``n``-grams of ``toks`` in order (empty when there are fewer than ``n`` tokens)."""
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    # Zipping shifted copies is several times faster than slicing each n-gram; the copies differ in
    # length by design, so zip stops at the shortest.
    return list(zip(*(toks[i:] for i in range(n)), strict=False))
