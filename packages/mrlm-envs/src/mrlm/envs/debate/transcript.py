"""Who speaks when in a debate, and what was said: sides, phases, seats and turns.

A debate has two sides, PRO (for the motion) and CON (against it), each with one or more debaters.
Every round each debater speaks once; the first round is the opening, the last the closing, and any
rounds between are rebuttals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Side = Literal["pro", "con"]
Phase = Literal["opening", "rebuttal", "closing"]

PRO: Side = "pro"
CON: Side = "con"
SIDES: tuple[Side, Side] = (PRO, CON)

#: What each side argues, in words shown to the debaters.
STANCE: dict[Side, str] = {PRO: "for the motion", CON: "against the motion"}

#: The task of each phase, in words shown to the debaters.
PHASE_TASK: dict[Phase, str] = {
    "opening": "State your case: your main arguments, each with its reasons and evidence.",
    "rebuttal": "Answer the other side's arguments point by point and strengthen your own case.",
    "closing": "Sum up: weigh the arguments made so far and explain why your side has won.",
}


@dataclass(frozen=True)
class Turn:
    """One speech of the debate.

    Attributes:
        speaker: the agent that spoke.
        side: the speaker's side.
        phase: the phase the speech belongs to.
        round: 1-based round number.
        text: the speech, cleaned of control characters and clipped (see ``text.clean_turn``).
        heard: how many turns before this one the speaker had seen when speaking. In turn-based play
            it is the index of the turn; when everyone speaks at once it stops at the round's start.
    """

    speaker: str
    side: Side
    phase: Phase
    round: int
    text: str
    heard: int


def schedule(rounds: int) -> tuple[Phase, ...]:
    """The phase of each round: an opening, ``rounds - 2`` rebuttals and a closing."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2:
        raise ValueError(f"rounds must be an int >= 2 (an opening and a closing), got {rounds!r}")
    rebuttal: Phase = "rebuttal"
    return ("opening", *[rebuttal] * (rounds - 2), "closing")


def seats(debaters_per_side: int) -> tuple[tuple[str, Side], ...]:
    """The agents in speaking order with their sides: ``pro, con`` or ``pro_0, con_0, pro_1, con_1, ...``."""
    if isinstance(debaters_per_side, bool) or not isinstance(debaters_per_side, int) or debaters_per_side < 1:
        raise ValueError(f"debaters_per_side must be a positive int, got {debaters_per_side!r}")
    if debaters_per_side == 1:
        return ((PRO, PRO), (CON, CON))
    return tuple((f"{side}_{i}", side) for i in range(debaters_per_side) for side in SIDES)


def format_turn(turn: Turn) -> str:
    """A turn as shown to debaters, judges and in the rendered transcript."""
    return f"[round {turn.round}, {turn.phase}] {turn.speaker} ({turn.side.upper()}):\n{turn.text}"


def format_transcript(turns: Sequence[Turn]) -> str:
    """Every turn, in order, separated by blank lines; ``(no speeches yet)`` when empty."""
    return "\n\n".join(format_turn(turn) for turn in turns) or "(no speeches yet)"
