"""Text metrics for the writing rewards: pure functions of token lists, each in [0, 1].

Every function accepts empty input and returns 0 for it (an empty part has no length, no diversity
and says nothing about the source), so hostile replies score low without special cases. All run in
time linear in the input, so a maximal reply costs milliseconds.
"""

from __future__ import annotations

from mrlm.envs.writing.text import STOPWORDS, content_words, ngrams


def band_score(value: float, low: float, high: float) -> float:
    """1 inside ``[low, high]``, falling linearly outside it.

    Below the band the score is ``value / low`` (half the shortest length scores 0.5); above it,
    ``1 - (value - high) / high`` (twice the longest length scores 0), floored at 0.

    >>> band_score(20, 10, 40), band_score(5, 10, 40), band_score(60, 10, 40), band_score(90, 10, 40)
    (1.0, 0.5, 0.5, 0.0)
    """
    if not 0 < low <= high:
        raise ValueError(f"a band needs 0 < low <= high, got [{low}, {high}]")
    if value < low:
        return max(value, 0.0) / low
    if value > high:
        return max(0.0, 1.0 - (value - high) / high)
    return 1.0


def distinct_n(toks: list[str], n: int) -> float:
    """Distinct ``n``-grams over all ``n``-grams (Li et al., 2016); 0 when there are none.

    >>> distinct_n("the cat saw the dog".split(), 1), distinct_n("a b a b".split(), 2)
    (0.8, 0.6666666666666666)
    """
    grams = ngrams(toks, n)
    return len(set(grams)) / len(grams) if grams else 0.0


def type_token_ratio(toks: list[str]) -> float:
    """Distinct tokens over tokens: :func:`distinct_n` with ``n = 1``."""
    return distinct_n(toks, 1)


def unigram_precision(toks: list[str], source: list[str]) -> float:
    """The share of the text's content words (repeats counted) that occur in the source.

    Function words are ignored: sharing "the" with the source says nothing about the subject.
    """
    words = content_words(toks)
    if not words:
        return 0.0
    vocabulary = set(source)
    return sum(word in vocabulary for word in words) / len(words)


def bigram_precision(toks: list[str], source: list[str]) -> float:
    """The share of the text's bigrams holding a content word that also occur in the source.

    Bigrams of two function words ("of the") are skipped for the same reason as in
    :func:`unigram_precision`.
    """
    grams = [g for g in ngrams(toks, 2) if not (g[0] in STOPWORDS and g[1] in STOPWORDS)]
    if not grams:
        return 0.0
    seen = set(ngrams(source, 2))
    return sum(gram in seen for gram in grams) / len(grams)


def copied_fraction(toks: list[str], source: list[str], span: int) -> float:
    """The share of the text's tokens that lie inside a run of ``span`` or more tokens copied verbatim.

    A token counts when some window of ``span`` consecutive tokens containing it occurs word for
    word in the source. Short shared phrases ("the new model") are normal; whole copied clauses are
    what this measures.

    >>> copied_fraction("x a b c d y".split(), "a b c d".split(), 3)
    0.6666666666666666
    """
    _check_span(span)
    return _copied_tokens(toks, source, span) / len(toks) if toks else 0.0


def shared_fraction(a: list[str], b: list[str], span: int) -> float:
    """The share of the tokens of two texts, taken together, that the other text repeats verbatim.

    A token of ``a`` counts when it lies inside a run of ``span`` or more tokens that occurs word
    for word in ``b`` (as in :func:`copied_fraction`), and the other way round. Two identical texts
    score 1; a sentence that one text quotes from the other counts twice (once in each), so a short
    quote in a long text costs in proportion to its length.

    >>> shared_fraction("a b c d".split(), "x a b c y z".split(), 3)  # "a b c": 3 + 3 of 10 tokens
    0.6
    """
    _check_span(span)
    total = len(a) + len(b)
    return (_copied_tokens(a, b, span) + _copied_tokens(b, a, span)) / total if total else 0.0


def _check_span(span: int) -> None:
    if span < 1:
        raise ValueError(f"span must be positive, got {span}")


def _copied_tokens(toks: list[str], source: list[str], span: int) -> int:
    """How many tokens of ``toks`` lie inside a run of ``span`` tokens found in ``source``."""
    if len(toks) < span:
        return 0
    seen = set(ngrams(source, span))
    covered = [False] * len(toks)
    for start, gram in enumerate(ngrams(toks, span)):
        if gram in seen:
            covered[start : start + span] = [True] * span
    return sum(covered)


def function_word_share(toks: list[str]) -> float:
    """The share of the text's tokens that are function words.

    Function words are :data:`~mrlm.envs.writing.text.STOPWORDS`. English prose holds about
    0.3-0.55 of them; a list of content words, none.

    >>> function_word_share("the cat sat on the mat".split())
    0.5
    """
    return sum(tok in STOPWORDS for tok in toks) / len(toks) if toks else 0.0


def function_word_variety(toks: list[str]) -> float:
    """:func:`distinct_n` with ``n = 2`` of the text's function words, in order, the rest left out.

    Prose strings its function words in ever-changing pairs: 0.8 and above in a paragraph, still
    about 0.8 over 500 tokens. A few filler words cycled between content words repeat a few pairs:
    here "the of and" twice gives 3 distinct pairs out of 5. Fewer than two function words give 0.

    >>> function_word_variety("soil the water of crops and yield the farm of rain and".split())
    0.6
    >>> function_word_variety("most farmers decide when to water by looking at the crop".split())
    1.0
    """
    return distinct_n([tok for tok in toks if tok in STOPWORDS], 2)


def same_class_share(toks: list[str]) -> float:
    """The share of adjacent token pairs that are two function words or two content words.

    Prose mixes runs of both ("the new soil moisture sensor", "in the"): about 0.3-0.55 of its
    pairs, 0.15 and above in single sentences. Content words strung on filler words one by one have
    none; a list of content words has nothing else (:func:`function_word_share` tells the two
    apart). Below, new-soil, soil-sensor, is-in and in-the are 4 of 7 pairs:

    >>> same_class_share("the new soil sensor is in the field".split())
    0.5714285714285714
    >>> same_class_share("soil the water of crops and yield".split())
    0.0
    """
    pairs = ngrams(toks, 2)
    if not pairs:
        return 0.0
    return sum((a in STOPWORDS) == (b in STOPWORDS) for a, b in pairs) / len(pairs)


def overlap_coefficient(a: list[str], b: list[str]) -> float:
    """Shared content-word types over the smaller set of them (Szymkiewicz-Simpson); 0 if one is empty.

    Between a summary and its expansion this is the share of the summary's subject matter that the
    expansion also covers.

    >>> overlap_coefficient("cats chase mice".split(), "the cats and the dogs".split())
    0.5
    """
    left, right = set(content_words(a)), set(content_words(b))
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))
