"""A deterministic judge that scores each speech by rules: structure, evidence, reasoning, rebuttal.

Each turn gets component scores in [0, 1]; the turn's score is their mean minus a fixed penalty per
fault, clipped to [0, 1]. A side's score is the mean over its turns. The rules reward what a debate
coach looks for and are cheap to compute; they read words, not meaning, so a policy trained against
them alone can learn to stuff markers. Pair them with a :class:`~mrlm.envs.debate.model_judge.ModelJudge`
where that matters.

| component | what it counts | full marks at |
|---|---|---|
| structure | signposts (``first``, ``moreover``, ``in conclusion``...) and list items | 3 |
| evidence | ``for example``, ``studies``, ``data``, ``according to``... plus numbers (2 at most) | 3 |
| reasoning | ``because``, ``therefore``, ``as a result``, ``which means``... | 2 |
| relevance | content words shared with the motion | 2 (or all, for shorter motions) |
| development | words in the turn | 60 |
| rebuttal | half: rebuttal markers (``my opponent``, ``however``, ``fails to``...) | 2 |
| | half: content words shared with the opponents' heard turns, motion words aside | 4 |

Rebuttal counts in rebuttal and closing turns once the speaker has heard an opponent (``Turn.heard``);
elsewhere it is left out of the mean. Markers are counted once each, however often they occur.

| fault | when |
|---|---|
| ``empty`` | no words at all: the turn scores 0 |
| ``repeated`` | word-trigram Jaccard similarity >= 0.5 with one of the speaker's earlier turns |
| ``repetitive`` | 12 words or more, and fewer than half of its word trigrams distinct |
| ``off_topic`` | no content word shared with the motion |
| ``concedes`` | gives the debate away (``you are right``, ``I was wrong``) or takes the other side's stance |
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from mrlm.envs.core.numbers import finite_float
from mrlm.envs.debate.judging import Verdict, check_tie_margin, decide
from mrlm.envs.debate.text import (
    content_words,
    distinct_matches,
    jaccard,
    phrase_pattern,
    shingles,
    words,
)
from mrlm.envs.debate.transcript import CON, PRO, SIDES, Side, Turn

STRUCTURE = phrase_pattern(
    """first|firstly|second|secondly|third|thirdly|finally|lastly|in conclusion|to conclude|in summary
    |to sum up|moreover|furthermore|in addition|additionally|on the other hand|my first point"""
)
EVIDENCE = phrase_pattern(
    """for example|for instance|such as|e.g.|study|studies|research|researchers|data|evidence|survey
    |surveys|statistics|report|according to|experiment|trial|trials|percent|per cent|case study"""
)
REASONING = phrase_pattern(
    """because|since|therefore|thus|hence|consequently|as a result|which means|this means|that means
    |leads to|lead to|led to|results in|due to|so that|it follows|given that|unless"""
)
REBUTTAL = phrase_pattern(
    """my opponent|my opponents|the other side|the opposing side|the opposition|the proposition|they claim
    |they claimed|they argue|they argued|they say|they said|it was claimed|ignores|fails to|overlooks
    |misleading|flawed|not true|is wrong|on the contrary|in response|to rebut|contrary to|however|but"""
)
CONCEDES = phrase_pattern(
    """i concede the debate|i concede defeat|i give up|my opponent is right|my opponents are right
    |the other side is right|you are right|i agree with my opponent|i agree with the other side|i was wrong
    |i have changed my mind|i changed my mind|you have convinced me|i withdraw my case"""
)
#: Phrases that take the stance of the other side, by the side that must not say them.
TURNCOAT: dict[Side, re.Pattern[str]] = {
    PRO: phrase_pattern(
        """i oppose the motion|i am against the motion|vote against the motion|reject the motion
        |the motion should fail|the motion is wrong|vote con"""
    ),
    CON: phrase_pattern(
        """i support the motion|i am for the motion|i agree with the motion|vote for the motion
        |accept the motion|the motion should pass|the motion is right|vote pro"""
    ),
}
_NEGATION = re.compile(r"(?:\bnot|\bnever|\bno|n't)\W+(?:\w+\W+){0,2}$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:\d+[.)]|[-*\u2022])[ \t]+\S", re.MULTILINE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")

#: Characters before a phrase searched for a negation ("I do not concede defeat").
NEGATION_WINDOW = 40
REPEAT_SIMILARITY = 0.5
REPETITIVE_MIN_WORDS = 12
REPETITIVE_DISTINCT_RATIO = 0.5
DEVELOPED_WORDS = 60


@dataclass(frozen=True)
class TurnScore:
    """The rule score of one turn and its parts (see the module docstring for each part).

    Attributes:
        score: the turn's score in [0, 1]: mean of the components, minus the penalty per fault.
        rebuttal: None where a rebuttal is not expected (openings, or no opponent heard yet).
        faults: the faults found, in a fixed order.
    """

    score: float
    structure: float
    evidence: float
    reasoning: float
    relevance: float
    development: float
    rebuttal: float | None
    faults: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain values for ``info``."""
        row = asdict(self)
        row["faults"] = list(self.faults)
        return row


@functools.lru_cache(maxsize=512)
def _features(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[tuple[str, ...]]]:
    """Words, content words and word trigrams of a speech. Cached because every later turn of a debate
    compares itself with the earlier ones, and the env scores the same transcript again at the end."""
    tokens = tuple(words(text))
    return tokens, content_words(text), shingles(tokens)


def _saturating(count: int, full: float) -> float:
    return min(1.0, count / full)


def _unnegated(pattern: re.Pattern[str], lowered: str) -> bool:
    """True when ``pattern`` occurs in ``lowered`` without a ``not``/``never``/``n't`` just before it."""
    return any(
        _NEGATION.search(lowered[max(0, m.start() - NEGATION_WINDOW) : m.start()]) is None
        for m in pattern.finditer(lowered)
    )


class RuleBasedJudge:
    """Scores turns and debates by the rules of the module docstring. Deterministic, no I/O.

    Args:
        penalty: subtracted from a turn's score for each fault (``empty`` aside, which scores 0).
        tie_margin: the debate is a tie when the side scores differ by this much or less.

    Example:
        >>> from mrlm.envs.debate.transcript import Turn
        >>> turn = Turn("pro", "pro", "opening", 1, "Cars clog city centres because they take space.", 0)
        >>> RuleBasedJudge().score_turn("Cities should ban private cars.", [turn], 0).faults
        ()
    """

    name = "rule"

    def __init__(self, *, penalty: float = 0.5, tie_margin: float = 0.0) -> None:
        if not 0.0 <= penalty <= 1.0:
            raise ValueError(f"penalty must lie in [0, 1], got {penalty!r}")
        self.penalty = finite_float("penalty", penalty)
        self.tie_margin = check_tie_margin(tie_margin)

    def score_turn(self, motion: str, transcript: Sequence[Turn], index: int) -> TurnScore:
        """The score of ``transcript[index]``, judged against the turns its speaker had heard."""
        turn = transcript[index]
        lowered = turn.text.lower()
        tokens, own, mine = _features(turn.text)
        if not tokens:
            return TurnScore(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, ("empty",))
        topic = content_words(motion)

        structure = _saturating(
            len(distinct_matches(STRUCTURE, lowered)) + min(3, len(_LIST_ITEM.findall(turn.text))), 3
        )
        numbers = len(set(_NUMBER.findall(lowered)))
        evidence = _saturating(len(distinct_matches(EVIDENCE, lowered)) + min(2, numbers), 3)
        reasoning = _saturating(len(distinct_matches(REASONING, lowered)), 2)
        on_topic = own & topic
        relevance = _saturating(len(on_topic), min(2, len(topic))) if topic else 1.0
        development = _saturating(len(tokens), DEVELOPED_WORDS)

        rebuttal: float | None = None
        heard_opponents = [t for t in transcript[: turn.heard] if t.side != turn.side]
        if turn.phase != "opening" and heard_opponents:
            their_words = frozenset().union(*(_features(t.text)[1] for t in heard_opponents))
            engaged = len((own & their_words) - topic)
            markers = len(distinct_matches(REBUTTAL, lowered))
            rebuttal = 0.5 * _saturating(markers, 2) + 0.5 * _saturating(engaged, 4)

        faults: list[str] = []
        earlier = [t for t in transcript[:index] if t.speaker == turn.speaker]
        if any(jaccard(mine, _features(t.text)[2]) >= REPEAT_SIMILARITY for t in earlier):
            faults.append("repeated")
        windows = max(1, len(tokens) - 2)
        if len(tokens) >= REPETITIVE_MIN_WORDS and len(mine) / windows < REPETITIVE_DISTINCT_RATIO:
            faults.append("repetitive")
        if topic and not on_topic:
            faults.append("off_topic")
        if _unnegated(CONCEDES, lowered) or _unnegated(TURNCOAT[turn.side], lowered):
            faults.append("concedes")

        parts = [structure, evidence, reasoning, relevance, development]
        if rebuttal is not None:
            parts.append(rebuttal)
        quality = sum(parts) / len(parts)
        score = min(1.0, max(0.0, quality - self.penalty * len(faults)))
        return TurnScore(
            score, structure, evidence, reasoning, relevance, development, rebuttal, tuple(faults)
        )

    def score_turns(self, motion: str, transcript: Sequence[Turn]) -> list[TurnScore]:
        """:meth:`score_turn` for every turn, in order."""
        return [self.score_turn(motion, transcript, i) for i in range(len(transcript))]

    def judge(self, motion: str, transcript: Sequence[Turn]) -> Verdict:
        """Each side's score is the mean score of its turns (0 for a side that never spoke)."""
        turn_scores = self.score_turns(motion, transcript)
        scores: dict[Side, float] = {}
        for side in SIDES:
            mine = [s.score for s, t in zip(turn_scores, transcript, strict=True) if t.side == side]
            scores[side] = sum(mine) / len(mine) if mine else 0.0
        faults = [
            f"{t.speaker} round {t.round}: {', '.join(s.faults)}"
            for s, t in zip(turn_scores, transcript, strict=True)
            if s.faults
        ]
        rationale = f"PRO {scores[PRO]:.3f}, CON {scores[CON]:.3f} (mean turn scores)"
        if faults:
            rationale += "; faults: " + "; ".join(faults)
        return Verdict(
            scores=scores,
            winner=decide(scores, self.tie_margin),
            turn_scores=tuple(s.score for s in turn_scores),
            judge=self.name,
            rationale=rationale,
        )
