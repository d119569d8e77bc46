"""The text units and metrics, against values worked out by hand."""

from __future__ import annotations

import pytest

from mrlm.envs.writing.metrics import (
    band_score,
    bigram_precision,
    copied_fraction,
    distinct_n,
    function_word_share,
    function_word_variety,
    overlap_coefficient,
    same_class_share,
    shared_fraction,
    type_token_ratio,
    unigram_precision,
)
from mrlm.envs.writing.text import content_words, count_words, ngrams, tokens


def test_words_are_counted_as_a_reader_counts_them() -> None:
    # Don't | stop | state-of-the-art | models | cost | 3.5 | million: the dash and "$" are not words.
    assert count_words("Don't stop — state-of-the-art models cost $3.5 million!") == 7
    assert count_words("Ünïcödé wörds count, tôo") == 4
    assert count_words("") == 0
    assert count_words(" \n\t\x00\x1b[31m ... --- ") == 1  # "31" is the only alphanumeric run


def test_tokens_follow_rouge_score() -> None:
    # Lowercase; anything outside [a-z0-9] separates, accented letters included.
    assert tokens("Don't stop — Café 3.5!") == ["don", "t", "stop", "caf", "3", "5"]
    assert tokens("\x00\u200b") == []


def test_content_words_drop_function_words() -> None:
    assert content_words(tokens("The cat sat on the mat because it was warm")) == [
        "cat",
        "sat",
        "mat",
        "warm",
    ]


def test_ngrams() -> None:
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a"], 2) == []
    with pytest.raises(ValueError, match="positive"):
        ngrams(["a"], 0)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (8, 1.0),  # lower edge of the band [8, 35]
        (35, 1.0),  # upper edge
        (20, 1.0),
        (4, 0.5),  # half the shortest length
        (0, 0.0),
        (40, 1 - 5 / 35),  # 5 words too many out of 35
        (52.5, 0.5),
        (70, 0.0),  # twice the longest length
        (500, 0.0),  # floored
    ],
)
def test_band_score(words: float, expected: float) -> None:
    assert band_score(words, 8, 35) == pytest.approx(expected, abs=1e-12)


def test_band_score_rejects_bad_bands() -> None:
    with pytest.raises(ValueError, match="low <= high"):
        band_score(3, 10, 5)
    with pytest.raises(ValueError, match="low <= high"):
        band_score(3, 0, 5)


def test_distinct_n_by_hand() -> None:
    toks = ["the", "cat", "sat", "on", "the", "mat", "the", "end"]
    # 8 tokens, 6 types (the x3): 6/8. 7 bigrams, all different: 7/7.
    assert distinct_n(toks, 1) == pytest.approx(0.75)
    assert type_token_ratio(toks) == pytest.approx(0.75)
    assert distinct_n(toks, 2) == pytest.approx(1.0)
    # "a a a a": 1 type out of 4 unigrams; 1 distinct bigram out of 3.
    assert distinct_n(["a"] * 4, 1) == pytest.approx(0.25)
    assert distinct_n(["a"] * 4, 2) == pytest.approx(1 / 3)
    assert distinct_n([], 1) == 0.0
    assert distinct_n(["a"], 2) == 0.0


def test_overlap_with_the_source() -> None:
    source = tokens("The old starter barely rises in the cold kitchen")
    # Content words of the text: starter, rises, warm, kitchen -> 3 of 4 are in the source.
    text = tokens("The starter rises in a warm kitchen")
    assert unigram_precision(text, source) == pytest.approx(3 / 4)
    # Bigrams keeping a content word: the-starter, starter-rises, rises-in, a-warm, warm-kitchen
    # ("in a" is two function words, skipped). In the source: the-starter? no ("old starter");
    # starter-rises? no ("starter barely"); rises-in: yes; the rest no -> 1 / 5.
    assert bigram_precision(text, source) == pytest.approx(1 / 5)
    assert unigram_precision(tokens("the of and"), source) == 0.0
    assert bigram_precision([], source) == 0.0


def test_copied_fraction_marks_tokens_inside_long_copied_spans() -> None:
    source = ["a", "b", "c", "d", "e", "f"]
    # With span 3: "b c d" and "c d e" occur in the source, covering b c d e: 4 of 7 tokens.
    assert copied_fraction(["x", "b", "c", "d", "e", "y", "z"], source, 3) == pytest.approx(4 / 7)
    # Two-token matches ("b c") are not long enough.
    assert copied_fraction(["b", "c", "x", "d", "e"], source, 3) == 0.0
    assert copied_fraction(source, source, 3) == 1.0
    assert copied_fraction(["a", "b"], source, 3) == 0.0  # shorter than a span
    with pytest.raises(ValueError, match="positive"):
        copied_fraction(source, source, 0)


def test_overlap_coefficient_measures_the_shorter_part_covered() -> None:
    summary = tokens("Starter fails in cold flat")  # starter, fails, cold, flat
    expansion = tokens("The starter was fine until the flat got cold; the yeast slowed down")
    # Shared: starter, cold, flat -> 3 of the summary's 4 content words.
    assert overlap_coefficient(summary, expansion) == pytest.approx(3 / 4)
    assert overlap_coefficient(expansion, summary) == pytest.approx(3 / 4)  # symmetric
    assert overlap_coefficient([], expansion) == 0.0


def test_shared_fraction_counts_a_shared_passage_in_both_texts() -> None:
    # With span 3, "b c d" is in both texts: 3 tokens of the 5 in the first, 3 of the 4 in the second.
    assert shared_fraction(["a", "b", "c", "d", "e"], ["b", "c", "d", "x"], 3) == pytest.approx(6 / 9)
    # A 3-token summary quoted in a 12-token expansion: 3 + 3 of 15 tokens.
    summary = ["p", "q", "r"]
    expansion = [*summary, *(f"w{i}" for i in range(9))]
    assert shared_fraction(summary, expansion, 3) == pytest.approx(6 / 15)
    assert shared_fraction(summary, summary, 3) == 1.0  # identical texts
    assert shared_fraction(["a", "b"], ["a", "b"], 3) == 0.0  # shorter than a span
    assert shared_fraction(["a", "b", "c"], [], 3) == 0.0
    assert shared_fraction([], [], 3) == 0.0
    with pytest.raises(ValueError, match="positive"):
        shared_fraction([], [], 0)


def test_function_word_share_by_hand() -> None:
    # the, on, the are function words: 3 of 6 tokens.
    assert function_word_share(tokens("The cat sat on the mat")) == pytest.approx(0.5)
    assert function_word_share(tokens("soil moisture sensor farms")) == 0.0
    assert function_word_share(tokens("of the and")) == 1.0
    assert function_word_share([]) == 0.0


def test_function_word_variety_by_hand() -> None:
    # Function words in order: in, the, of, a, to, the -> 5 bigrams, all different.
    text = tokens("Farmers in the hills of a dry region need to water the crops")
    assert function_word_variety(text) == pytest.approx(1.0)
    # Fillers cycled four times: the of and the of and the of and the of and -> 11 bigrams, 3 kinds.
    fillers = tokens(" ".join(f"w{i} {f}" for i, f in enumerate(["the", "of", "and"] * 4)))
    assert function_word_variety(fillers) == pytest.approx(3 / 11)
    assert function_word_variety(tokens("soil the moisture")) == 0.0  # one function word: no pair
    assert function_word_variety([]) == 0.0


def test_same_class_share_by_hand() -> None:
    # the-new mixed, new-soil content, soil-sensor content, sensor-is mixed, is-in function,
    # in-the function, the-field mixed: 4 of 7 pairs stay in one class.
    assert same_class_share(tokens("the new soil sensor is in the field")) == pytest.approx(4 / 7)
    assert same_class_share(tokens("soil the water of crops and yield")) == 0.0  # strict alternation
    assert same_class_share(tokens("soil moisture sensor")) == 1.0  # content words only
    assert same_class_share(["soil"]) == 0.0
