"""ROUGE-N and ROUGE-L (Lin, 2004, "ROUGE: A Package for Automatic Evaluation of Summaries").

The definitions and the tokenisation follow Google's ``rouge-score`` package with its defaults
(no stemming; see :func:`mrlm.envs.writing.text.tokens`), so scores agree with it; the test suite
checks this on varied pairs. For a candidate ``c`` and a reference ``r``:

* ROUGE-N: ``overlap = sum over n-grams g of min(count_c(g), count_r(g))``;
  ``precision = overlap / max(#n-grams of c, 1)``, ``recall = overlap / max(#n-grams of r, 1)``.
* ROUGE-L: ``precision = LCS(c, r) / |c|``, ``recall = LCS(c, r) / |r|`` (0 when either is empty).
* Both: ``F = 2 P R / (P + R)``, and 0 when ``P + R = 0``.

The longest common subsequence uses the bit-parallel recurrence of Allison and Dix (1986), in the
form given by Hyyrö (2004): the shorter sequence is a bit vector and each token of the longer one
costs a few big-integer operations, so a 60,000-character hostile reply is scored in milliseconds
where the textbook table would need minutes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mrlm.envs.writing.text import ngrams, tokens


@dataclass(frozen=True)
class RougeScore:
    """Precision, recall and F-measure of one ROUGE variant, each in [0, 1]."""

    precision: float
    recall: float
    fmeasure: float


def _score(hits: int, candidate_total: int, reference_total: int) -> RougeScore:
    precision = hits / max(candidate_total, 1)
    recall = hits / max(reference_total, 1)
    total = precision + recall
    fmeasure = 2 * precision * recall / total if total > 0 else 0.0
    return RougeScore(precision, recall, fmeasure)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    ``v`` has one bit per token of the shorter list; a 0 bit marks a position where the LCS grew.
    For each token ``t`` of the longer list, with ``m`` the positions where the shorter list holds
    ``t``: ``u = v & m; v = (v + u) | (v - u)``, kept to the list's width. The LCS is the count of
    0 bits at the end.
    """
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return 0
    width = len(short)
    full = (1 << width) - 1
    matches: dict[str, int] = {}
    for position, token in enumerate(short):
        matches[token] = matches.get(token, 0) | (1 << position)
    v = full
    for token in long:
        m = matches.get(token)
        if m is None:
            continue  # no match leaves v unchanged: (v + 0) | v == v
        u = v & m
        v = ((v + u) | (v - u)) & full
    return width - v.bit_count()


def rouge_n(candidate: list[str], reference: list[str], n: int) -> RougeScore:
    """ROUGE-N of candidate tokens against reference tokens."""
    cand = Counter(ngrams(candidate, n))
    ref = Counter(ngrams(reference, n))
    hits = sum(min(count, cand[gram]) for gram, count in ref.items())
    return _score(hits, sum(cand.values()), sum(ref.values()))


def rouge_l(candidate: list[str], reference: list[str]) -> RougeScore:
    """ROUGE-L (sentence level, as ``rouge-score``'s ``rougeL``) of candidate tokens against reference."""
    if not candidate or not reference:
        return RougeScore(0.0, 0.0, 0.0)
    return _score(lcs_length(candidate, reference), len(candidate), len(reference))


def rouge_scores(candidate: str, reference: str) -> dict[str, RougeScore]:
    """ROUGE-1, ROUGE-2 and ROUGE-L of two texts, keyed ``"rouge1"``, ``"rouge2"``, ``"rougeL"``."""
    cand, ref = tokens(candidate), tokens(reference)
    return {"rouge1": rouge_n(cand, ref, 1), "rouge2": rouge_n(cand, ref, 2), "rougeL": rouge_l(cand, ref)}
