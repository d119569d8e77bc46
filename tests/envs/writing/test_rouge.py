"""ROUGE-1/2/L against Google's rouge-score package (used here only, as the independent reference)."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer  # type: ignore[import-untyped]

from mrlm.envs.writing.rouge import lcs_length, rouge_l, rouge_n, rouge_scores
from mrlm.envs.writing.text import tokens

HANDWRITTEN_PAIRS = [
    ("the cat sat on the mat", "the cat sat on the mat"),
    ("the cat sat on the mat", "a dog lay under a table"),
    ("The Cat, sat: on THE mat!", "the cat sat on the mat"),
    ("", "the cat sat on the mat"),
    ("the cat sat on the mat", ""),
    ("", ""),
    ("!!! ... ---", "the cat"),
    ("the the the the the", "the cat the mat"),
    ("cat", "cat"),
    ("cat", "dog"),
    ("mat the on sat cat the", "the cat sat on the mat"),
    ("In 2023, GPT-4 scored 86.4% on MMLU.", "GPT-4 reached 86.4 percent on MMLU in 2023"),
    ("Café au lait, naïve résumé", "cafe au lait naive resume"),
    ("Tab\tseparated\nlines\r\nand   spaces", "tab separated lines and spaces"),
    ("don't won't can't", "do not will not cannot"),
    ("x" * 50, "x" * 50),
    ("a b a b a b a b", "b a b a"),
    ("a b c d e f g h i j", "j i h g f e d c b a"),
    (
        "My sourdough starter barely rises since I moved to a colder flat with chlorinated water.",
        "My two-year-old sourdough starter barely rises since I moved to a colder flat with "
        "chlorinated tap water; is it the temperature, the water, or is it ruined?",
    ),
    (
        "Pay off the car loan or save first? I have 400 dollars spare each month.",
        "I have $400 a month spare, a $6k car loan at 5% and only $900 saved; should I build an "
        "emergency fund before paying the loan off early?",
    ),
    ("\x00\x01 control \x1b[31m chars \u200b", "control chars"),
    ("日本語のテキスト and English", "English text"),
]


def _random_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    # A tiny vocabulary forces repeated tokens: the cases where clipped counts and LCS can go wrong.
    rng = random.Random(seed)
    vocabulary = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "Mat,", "CAT!", "2", "x-y"]
    pairs = []
    for _ in range(count):
        left = " ".join(rng.choices(vocabulary, k=rng.randint(0, 40)))
        right = " ".join(rng.choices(vocabulary, k=rng.randint(0, 40)))
        pairs.append((left, right))
    return pairs


PAIRS = HANDWRITTEN_PAIRS + _random_pairs(24, seed=0)


def test_there_are_a_few_dozen_pairs() -> None:
    assert len(PAIRS) >= 40


@pytest.mark.parametrize(("candidate", "reference"), PAIRS)
def test_rouge_matches_rouge_score(candidate: str, reference: str) -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    expected = scorer.score(reference, candidate)  # rouge-score takes (target, prediction)
    ours = rouge_scores(candidate, reference)
    for name in ("rouge1", "rouge2", "rougeL"):
        assert ours[name].precision == pytest.approx(expected[name].precision, abs=1e-6), name
        assert ours[name].recall == pytest.approx(expected[name].recall, abs=1e-6), name
        assert ours[name].fmeasure == pytest.approx(expected[name].fmeasure, abs=1e-6), name


def test_rouge_by_hand() -> None:
    cand, ref = tokens("the cat sat on the mat"), tokens("the cat lay on the mat")
    # Unigrams: 5 of 6 match (all but sat/lay): P = R = F = 5/6.
    assert rouge_n(cand, ref, 1).fmeasure == pytest.approx(5 / 6)
    # Bigrams: the-cat, on-the, the-mat match; cat-sat and sat-on do not: 3/5.
    assert rouge_n(cand, ref, 2).fmeasure == pytest.approx(3 / 5)
    # LCS: the cat on the mat = 5 tokens.
    assert rouge_l(cand, ref).fmeasure == pytest.approx(5 / 6)


def _naive_lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def test_bit_parallel_lcs_equals_the_table() -> None:
    rng = random.Random(7)
    for _ in range(60):
        alphabet = "abcdef"[: rng.randint(1, 6)]
        a = rng.choices(alphabet, k=rng.randint(0, 120))
        b = rng.choices(alphabet, k=rng.randint(0, 120))
        assert lcs_length(a, b) == _naive_lcs(a, b) == lcs_length(b, a)


def test_a_huge_candidate_is_scored() -> None:
    # 30,000 tokens against a 20-token reference: the table would need 600,000 cells per score.
    candidate = "the post asks about a cold kitchen " * 4300
    scores = rouge_scores(candidate, "my starter does not rise in a cold kitchen with chlorinated water")
    assert 0 < scores["rougeL"].recall <= 1
    assert scores["rougeL"].precision < 0.001
