"""The rules of one debate, apart from any RL API: speaking order, observations, verdict, rewards.

:class:`DebateGame` is a :class:`~mrlm.envs.core.game.Game`; :mod:`mrlm.envs.debate.env` turns it into
PettingZoo's turn-based and simultaneous forms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

import numpy as np

from mrlm.envs.core.game import play_in_turn
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.debate.judging import Judge, Verdict
from mrlm.envs.debate.motions import check_motions
from mrlm.envs.debate.rule_judge import RuleBasedJudge, TurnScore
from mrlm.envs.debate.text import clean_turn
from mrlm.envs.debate.transcript import (
    PHASE_TASK,
    SIDES,
    STANCE,
    Phase,
    Side,
    Turn,
    format_transcript,
    format_turn,
    schedule,
    seats,
)

RewardMode = Literal["zero_sum", "scores"]
REWARD_MODES: tuple[RewardMode, ...] = get_args(RewardMode)

#: The most characters a turn may keep; clipping protects observation size and judge cost.
MAX_TURN_CHARS_LIMIT = 20_000
DEFAULT_ROUNDS = 4
DEFAULT_MAX_TURN_CHARS = 4000


class DebateGame:
    """One debate: who speaks next, what each debater sees, and the verdict at the end.

    Args:
        motions: the motions an episode draws from (see :meth:`start`).
        rounds: speaking rounds (each debater speaks once per round): an opening, ``rounds - 2``
            rebuttals and a closing.
        debaters_per_side: 1 gives agents ``pro`` and ``con``; more give ``pro_0, con_0, pro_1, ...``.
        judge: decides the debate once every turn is spoken.
        scorer: scores each turn as it is spoken (the per-turn feedback; it does not decide).
        reward_mode: ``"zero_sum"`` (+1 to the winning side, -1 to the losing one, 0 for a tie) or
            ``"scores"`` (each agent gets its side's score from the verdict).
        max_turn_chars: characters of a speech kept; the rest is cut off (and the turn marked clipped).
        simultaneous: everyone in a round speaks at once (the parallel API): a speaker hears only the
            earlier rounds. Otherwise speakers take turns and hear every earlier turn.
        max_observation_chars: the longest observation; the oldest turns are left out to fit.
    """

    def __init__(
        self,
        *,
        motions: tuple[str, ...],
        rounds: int,
        debaters_per_side: int,
        judge: Judge,
        scorer: RuleBasedJudge,
        reward_mode: RewardMode,
        max_turn_chars: int,
        simultaneous: bool,
        max_observation_chars: int,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if (
            isinstance(max_turn_chars, bool)
            or not isinstance(max_turn_chars, int)
            or not 1 <= max_turn_chars <= MAX_TURN_CHARS_LIMIT
        ):
            raise ValueError(
                f"max_turn_chars must be an int in [1, {MAX_TURN_CHARS_LIMIT}], got {max_turn_chars!r}"
            )
        if not isinstance(judge, Judge):
            raise TypeError(f"judge must have a judge(motion, transcript) method, got {type(judge).__name__}")
        self.motions = motions
        self.phases = schedule(rounds)
        self.seats = seats(debaters_per_side)
        self.agents = tuple(agent for agent, _ in self.seats)
        self.side_of: dict[str, Side] = dict(self.seats)
        self.judge = judge
        self.scorer = scorer
        self.reward_mode = reward_mode
        self.max_turn_chars = max_turn_chars
        self.simultaneous = simultaneous
        self.max_observation_chars = max_observation_chars
        self.motion = ""
        self.turns: list[Turn] = []
        self.verdict: Verdict | None = None

    # State ----------------------------------------------------------------------------------------

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Begin a debate on ``options["motion"]``, else on a motion chosen by
        :func:`~mrlm.envs.core.task_choice.choose_task`; return each agent's reset info."""
        if "motion" in options:
            self.motion = check_motions([options["motion"]])[0]
        else:
            self.motion = choose_task(self.motions, {}, rng, options, seed=seed)
        self.turns = []
        self.verdict = None
        return {agent: self.reset_info(agent) for agent in self.agents}

    @property
    def round_index(self) -> int:
        """0-based round of the next turn (``len(phases)`` once the debate is over)."""
        return len(self.turns) // len(self.agents)

    @property
    def over(self) -> bool:
        return len(self.turns) >= len(self.phases) * len(self.agents)

    def next_speaker(self) -> str:
        return self.agents[len(self.turns) % len(self.agents)]

    def teammates(self, agent: str) -> list[str]:
        return [a for a in self.agents if a != agent and self.side_of[a] == self.side_of[agent]]

    # Moves ----------------------------------------------------------------------------------------

    def speak(self, agent: str, text: str) -> tuple[Turn, TurnScore, bool]:
        """Record ``agent``'s speech; return the turn, its rule score and whether it was clipped.

        Raises:
            RuntimeError: the debate is over, or it is not ``agent``'s turn.
        """
        if self.over:
            raise RuntimeError("the debate is over; start a new one")
        if agent != self.next_speaker():
            raise RuntimeError(f"it is {self.next_speaker()}'s turn to speak, not {agent}'s")
        round_index = self.round_index
        heard = round_index * len(self.agents) if self.simultaneous else len(self.turns)
        cleaned, clipped = clean_turn(text, self.max_turn_chars)
        turn = Turn(
            speaker=agent,
            side=self.side_of[agent],
            phase=self.phases[round_index],
            round=round_index + 1,
            text=cleaned,
            heard=heard,
        )
        self.turns.append(turn)
        return turn, self.scorer.score_turn(self.motion, self.turns, len(self.turns) - 1), clipped

    def move(self, agent: str, action: str) -> Outcome:
        """``agent``'s speech; after the last one the judge decides and every agent is paid."""
        turn, score, clipped = self.speak(agent, action)
        infos: dict[str, dict[str, Any]] = {
            agent: {
                "turn_score": score.score,
                "turn_feedback": score.as_dict(),
                "round": turn.round,
                "phase": turn.phase,
                "clipped": clipped,
            }
        }
        if not self.over:
            return Outcome(infos=infos)
        verdict = self.decide()
        for name in self.agents:
            infos[name] = {
                **infos.get(name, {}),
                "verdict": verdict.as_dict(),
                "winner": verdict.winner,
                "side_score": verdict.scores[self.side_of[name]],
            }
        return Outcome(rewards=self.rewards(verdict), done=True, infos=infos)

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """A round's speeches at once, in speaking order; with ``simultaneous`` each speaker has heard
        only the earlier rounds."""
        return play_in_turn(self, actions)

    def decide(self) -> Verdict:
        """Ask the judge once the debate is over (the verdict is kept; the judge is asked once)."""
        if not self.over:
            raise RuntimeError("the debate is not over yet")
        if self.verdict is None:
            self.verdict = self.judge.judge(self.motion, list(self.turns))
        return self.verdict

    def rewards(self, verdict: Verdict) -> dict[str, float]:
        """Each agent's final reward under ``reward_mode``; teammates always share."""
        if self.reward_mode == "scores":
            return {agent: float(verdict.scores[self.side_of[agent]]) for agent in self.agents}
        if verdict.winner is None:
            return dict.fromkeys(self.agents, 0.0)
        return {agent: 1.0 if self.side_of[agent] == verdict.winner else -1.0 for agent in self.agents}

    # What is shown --------------------------------------------------------------------------------

    def observe(self, agent: str) -> str:
        """The motion, ``agent``'s side, the current phase and the transcript heard so far."""
        side = self.side_of[agent]
        mates = self.teammates(agent)
        lines = [
            f"Motion: {self.motion}",
            f"You are {agent}, on the {side.upper()} side: you argue {STANCE[side]}."
            + (f" Your teammates: {', '.join(mates)}." if mates else ""),
        ]
        if self.over:
            lines.append(self._outcome_line())
        else:
            phase: Phase = self.phases[self.round_index]
            lines.append(
                f"Phase: {phase} (round {self.round_index + 1} of {len(self.phases)}). {PHASE_TASK[phase]}"
            )
        header = "\n".join(lines) + "\n\nTranscript so far:\n"
        return header + self._fitted_transcript(self.max_observation_chars - len(header))

    def _outcome_line(self) -> str:
        if self.verdict is None:
            return "The debate is over."
        scores = ", ".join(f"{side.upper()} {self.verdict.scores[side]:.2f}" for side in SIDES)
        winner = f"{self.verdict.winner.upper()} wins" if self.verdict.winner else "It is a tie"
        return f"The debate is over. {winner} ({scores})."

    def _fitted_transcript(self, budget: int) -> str:
        """The transcript, leaving out the oldest turns if it would exceed ``budget`` characters."""
        blocks = [format_turn(turn) for turn in self.turns]
        size = sum(len(b) + 2 for b in blocks)
        dropped = 0
        while blocks and size > budget - 60:  # 60: room for the note saying what was left out
            size -= len(blocks.pop(0)) + 2
            dropped += 1
        text = "\n\n".join(blocks) or "(no speeches yet)"
        return f"({dropped} earlier turns left out)\n\n{text}" if dropped else text

    def render(self) -> str:
        """The motion, the whole transcript and, at the end, the verdict."""
        text = f"Motion: {self.motion}\n\n{format_transcript(self.turns)}\n"
        if self.verdict is not None:
            text += f"\n{self._outcome_line()}\nJudge: {self.verdict.judge}. {self.verdict.rationale}\n"
        return text

    def reset_info(self, agent: str) -> dict[str, Any]:
        return {
            "motion": self.motion,
            "side": self.side_of[agent],
            "teammates": self.teammates(agent),
            "phases": list(self.phases),
        }
