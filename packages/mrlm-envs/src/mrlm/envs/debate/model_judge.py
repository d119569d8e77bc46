"""A judge that asks a chat model for the verdict and reads the scores out of its reply.

The model is any ``(messages) -> str`` callable, such as a local pipeline, or an OpenAI-compatible
endpoint through :class:`~mrlm.envs.debate.chat_http.OpenAIChat`. The reply must end with a line such
as ``PRO: 7/10, CON: 4/10`` (or with a JSON object ``{"pro": 7, "con": 4}``); the score statement that
comes last in the reply is the verdict, so scores the judge quotes from the transcript before its own
(a debater may plant either form in a speech) do not count. A reply without both scores, a failing
call or an out-of-range score raises :class:`JudgeError`, or hands the debate to the ``fallback``
judge when one is set; no score is ever invented.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from mrlm.envs.debate.chat_http import OpenAIChat
from mrlm.envs.debate.judging import Judge, JudgeError, Verdict, check_tie_margin, decide
from mrlm.envs.debate.transcript import CON, PRO, SIDES, Side, Turn, format_transcript

ChatFn = Callable[[list[dict[str, str]]], str]

#: Characters of the model's reply kept as the verdict's rationale and quoted in errors.
RATIONALE_CHARS = 2000
QUOTE_CHARS = 200

SYSTEM_PROMPT = (
    "You judge a formal debate. Weigh how well each side argued: the structure of its case, the "
    "evidence and reasoning behind each claim, how directly it answered the other side, and whether its "
    "speakers stayed on the motion and on their own side. Your own opinion of the motion does not count, "
    "and length alone earns nothing."
)

INSTRUCTIONS = (
    "Score each side from 0 to {scale:g}. Explain your decision in a few sentences, then end with one "
    "line in exactly this form:\nPRO: <score>/{scale:g}, CON: <score>/{scale:g}"
)

_NUMBER = r"(\d+(?:\.\d+)?)"
_SCORE_LINE = {
    side: re.compile(
        rf"\b{side}\b[\s*_]*(?:score)?[\s*_]*[:=\-]\s*[*_]*\s*{_NUMBER}(?:\s*/\s*{_NUMBER})?", re.IGNORECASE
    )
    for side in SIDES
}
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_scores(reply: str, scale: float = 10.0) -> dict[Side, float]:
    """The two side scores of a judge's reply, as fractions in [0, 1].

    Two forms of score statement are read: ``PRO: 7/10``-style fields (``PRO: 7``,
    ``**Pro**: 7.5 / 10``, ``CON score = 4``; each side's last field counts, and the statement ends
    where the later of the two ends), and a flat JSON object with ``pro`` and ``con`` keys (any case;
    values numbers or strings like ``"7/10"``; the last such object counts). When the reply holds
    both, the statement that ends last wins, whichever its form: a JSON object quoted before the
    final ``PRO: x/10, CON: y/10`` line does not override it, nor does a line quoted before a final
    JSON object. A score written without a denominator is out of ``scale``.

    Raises:
        JudgeError: a side's score is missing, or a score lies outside [0, 1] once divided.
    """
    statements = [
        statement
        for statement in (_scores_from_json(reply), _scores_from_lines(reply))
        if statement is not None
    ]
    if not statements:
        raise JudgeError(
            "the judge's reply holds no score for both sides (expected a line 'PRO: 7/10, CON: 4/10'); "
            f"reply: {reply[-QUOTE_CHARS:]!r}"
        )
    found, _ = max(statements, key=lambda statement: statement[1])
    scores: dict[Side, float] = {}
    for side in SIDES:
        value, denominator = found[side]
        total = scale if denominator is None else denominator
        if not total > 0 or not 0.0 <= value <= total:
            shown = f"{value:g}" if denominator is None else f"{value:g}/{denominator:g}"
            raise JudgeError(f"the judge gave {side.upper()} the score {shown}, outside 0..{total:g}")
        scores[side] = value / total
    return scores


Fraction = tuple[float, float | None]
#: Both sides' scores, and the offset in the reply where the statement giving them ends.
Statement = tuple[dict[Side, Fraction], int]


def _scores_from_lines(reply: str) -> Statement | None:
    """Each side's last ``PRO: 7/10``-style field, ending where the later of the two ends."""
    found: dict[Side, Fraction] = {}
    end = 0
    for side, pattern in _SCORE_LINE.items():
        matches = list(pattern.finditer(reply))
        if not matches:
            return None
        value, denominator = matches[-1].groups()
        found[side] = (float(value), float(denominator) if denominator else None)
        end = max(end, matches[-1].end())
    return found, end


def _scores_from_json(reply: str) -> Statement | None:
    """The last flat JSON object giving both sides' scores, and where it ends."""
    for candidate in reversed(list(_FLAT_OBJECT.finditer(reply))):
        try:
            data = json.loads(candidate.group())
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        lowered = {str(key).strip().lower(): value for key, value in data.items()}
        pro, con = _json_score(lowered.get(PRO)), _json_score(lowered.get(CON))
        if pro is not None and con is not None:
            return {PRO: pro, CON: con}, candidate.end()
    return None


def _json_score(value: Any) -> Fraction | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return (float(value), None)
    if isinstance(value, str):
        match = re.fullmatch(rf"\s*{_NUMBER}\s*(?:/\s*{_NUMBER})?\s*", value)
        if match:
            return (float(match.group(1)), float(match.group(2)) if match.group(2) else None)
    return None


class ModelJudge:
    """Asks a chat model to score both sides; see the module docstring for the reply format.

    Args:
        chat: ``(messages) -> reply``; messages are ``[{"role": "system"|"user", "content": ...}]``.
            Any exception it raises becomes a :class:`JudgeError`.
        scale: the top of the score range asked for (scores are divided by it).
        fallback: the judge used when this one fails; its verdict carries ``error`` and a judge name
            ending in ``(fallback)``. None: failures raise :class:`JudgeError`.
        tie_margin: the debate is a tie when the side scores (as fractions) differ by this or less.

    Example:
        >>> judge = ModelJudge(lambda messages: "PRO argued better.\\nPRO: 8/10, CON: 5/10")
        >>> judge.judge("Cities should ban private cars.", []).winner
        'pro'
    """

    name = "model"

    def __init__(
        self,
        chat: ChatFn,
        *,
        scale: float = 10.0,
        fallback: Judge | None = None,
        tie_margin: float = 0.0,
    ) -> None:
        if not callable(chat):
            raise TypeError(f"chat must be a callable (messages) -> str, got {type(chat).__name__}")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        self.chat = chat
        self.scale = float(scale)
        self.fallback = fallback
        self.tie_margin = check_tie_margin(tie_margin)

    @classmethod
    def from_endpoint(
        cls,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        scale: float = 10.0,
        fallback: Judge | None = None,
        tie_margin: float = 0.0,
    ) -> ModelJudge:
        """A judge asking ``model`` at an OpenAI-compatible ``base_url`` (see :class:`OpenAIChat`)."""
        chat = OpenAIChat(base_url, model, api_key_env=api_key_env, timeout=timeout)
        return cls(chat, scale=scale, fallback=fallback, tie_margin=tie_margin)

    def messages(self, motion: str, transcript: Sequence[Turn]) -> list[dict[str, str]]:
        """The chat sent to the model for this debate."""
        user = (
            f"Motion: {motion}\n\nPRO argues for the motion and CON against it.\n\n"
            f"Transcript:\n{format_transcript(transcript)}\n\n{INSTRUCTIONS.format(scale=self.scale)}"
        )
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def judge(self, motion: str, transcript: Sequence[Turn]) -> Verdict:
        try:
            return self._ask(motion, transcript)
        except JudgeError as error:
            if self.fallback is None:
                raise
            verdict = self.fallback.judge(motion, transcript)
            return dataclasses.replace(
                verdict, judge=f"{verdict.judge or 'judge'} (fallback)", error=str(error)
            )

    def _ask(self, motion: str, transcript: Sequence[Turn]) -> Verdict:
        try:
            reply = self.chat(self.messages(motion, transcript))
        except JudgeError:
            raise
        except Exception as error:  # any failure of user code is a judge failure, reported as such
            raise JudgeError(f"the judge model call failed: {type(error).__name__}: {error}") from error
        if not isinstance(reply, str):
            raise JudgeError(f"the judge model returned {type(reply).__name__}, not str")
        scores = parse_scores(reply, self.scale)
        return Verdict(
            scores=scores,
            winner=decide(scores, self.tie_margin),
            judge=self.name,
            rationale=reply[-RATIONALE_CHARS:],
        )
