"""What every judge answers (:class:`Verdict`) and the one method a judge has (:class:`Judge`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mrlm.envs.debate.transcript import CON, PRO, SIDES, Side, Turn


class JudgeError(RuntimeError):
    """A judge could not reach a verdict: unparseable reply, HTTP error, timeout, bad answer format."""


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on a whole debate.

    Attributes:
        scores: the score of each side (``"pro"``, ``"con"``), in [0, 1].
        winner: the side with the higher score, or None for a tie (scores within the judge's margin).
        turn_scores: one score in [0, 1] per turn of the transcript, in order; empty when the judge
            scores sides only.
        judge: which judge decided, such as ``"rule"``, ``"model"`` or ``"rule (fallback)"``.
        rationale: the judge's explanation (a model's reply, or a rule summary).
        error: when a fallback judge decided, the error of the judge that failed; None otherwise.
    """

    scores: Mapping[Side, float]
    winner: Side | None
    turn_scores: tuple[float, ...] = ()
    judge: str = ""
    rationale: str = ""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, for ``info``."""
        return {
            "scores": {side: float(self.scores[side]) for side in SIDES},
            "winner": self.winner,
            "turn_scores": [float(s) for s in self.turn_scores],
            "judge": self.judge,
            "rationale": self.rationale,
            "error": self.error,
        }


def decide(scores: Mapping[Side, float], tie_margin: float) -> Side | None:
    """The winning side: the higher score, unless the two differ by ``tie_margin`` or less."""
    gap = scores[PRO] - scores[CON]
    if abs(gap) <= tie_margin:
        return None
    return PRO if gap > 0 else CON


def check_tie_margin(tie_margin: float) -> float:
    if not 0.0 <= tie_margin < 1.0:
        raise ValueError(f"tie_margin must lie in [0, 1), got {tie_margin!r}")
    return float(tie_margin)


@runtime_checkable
class Judge(Protocol):
    """Anything that can decide a debate.

    ``judge(motion, transcript)`` returns a :class:`Verdict` or raises :class:`JudgeError`; it must not
    return a made-up score when it fails. A judge may be called from several envs, so it should keep no
    per-debate state.
    """

    def judge(self, motion: str, transcript: Sequence[Turn]) -> Verdict: ...
