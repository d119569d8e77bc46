"""The rules of ``mrlm/TeamSum-v0``, free of any RL API: parts, replies and the team's reward.

Each agent of a team is dealt one part, a small sum or difference such as ``3 + 5``; the team's answer
is the sum of every part's value. An agent sees only its own part, so the team is right only when
every member states its own value: no member can carry the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from mrlm.envs.core.game import play_in_turn
from mrlm.envs.core.multi_agent import Outcome
from mrlm.envs.math.answers import extract
from mrlm.envs.math.values import parse_number

#: Agent names, in order; a team of ``n`` takes the first ``n``.
AGENT_NAMES = ("first", "second", "third", "fourth")
#: Operators a part may use.
OPERATIONS = ("+", "-")
MIN_AGENTS, MAX_AGENTS = 2, len(AGENT_NAMES)
#: Bounds of ``low`` and ``high``: each operand has at most two digits.
MIN_OPERAND, MAX_OPERAND = 0, 99

CORRECT = "Correct: the team's values add up to the team's answer."
WRONG = "Not correct: the team's values do not add up to the team's answer."
MISSING = "Not correct: not every member gave its value as a \\boxed{} integer."


def system_prompt(num_agents: int) -> str:
    """What every member is told: the team, the rule of the sum, and where its value goes."""
    return (
        f"You are a careful mathematician in a team of {num_agents}. Each member is given its own question, "
        "and the team's answer is the sum of every member's value. Think step by step, then give the "
        "value of your own question as \\boxed{answer}."
    )


class Part(NamedTuple):
    """One agent's part: ``x op y``, whose value is ``value``."""

    x: int
    op: str
    y: int
    value: int

    @property
    def expression(self) -> str:
        """``"3 + 5"``."""
        return f"{self.x} {self.op} {self.y}"

    @property
    def question(self) -> str:
        """``"What is 3 + 5?"``, the form of Math-v0's integer questions."""
        return f"What is {self.expression}?"

    @property
    def demonstration(self) -> str:
        """A reply that states the value: ``"3 + 5 = 8. \\boxed{8}"``."""
        return f"{self.expression} = {self.value}. \\boxed{{{self.value}}}"


def draw_part(rng: np.random.Generator, low: int, high: int, operations: Sequence[str]) -> Part:
    """A part with operands drawn uniformly from ``[low, high]`` and an operator from ``operations``."""
    x = int(rng.integers(low, high + 1))
    y = int(rng.integers(low, high + 1))
    op = operations[int(rng.integers(len(operations)))]
    return Part(x, op, y, x + y if op == "+" else x - y)


def parse_value(reply: str) -> int | None:
    """The integer in the last ``\\boxed{}`` of ``reply``, or None.

    The box is found by Math-v0's extraction (only the end of a long reply is read; nested braces
    balance; the last box counts) and read as one exact number (``8``, ``-2``, ``1,000``, ``8.0``,
    ``\\frac{16}{2}``); anything else, a non-integer included, is None. A reply whose answer is not
    in a box is None even when it ends with the right number: the prompt asks for the box.
    """
    found = extract(reply)
    if found.source != "boxed" or found.answer is None:
        return None
    value = parse_number(found.answer)
    if value is None or value.denominator != 1:
        return None
    return int(value)


@dataclass(frozen=True)
class TeamSumRules:
    """What every episode of one env shares; the arguments of ``mrlm/TeamSum-v0``, checked."""

    num_agents: int = 2
    low: int = 1
    high: int = 9
    operations: tuple[str, ...] = ("+",)
    correct_reward: float = 1.0
    format_reward: float = 0.0
    rounds: int = 1

    def __post_init__(self) -> None:
        if not _is_int(self.num_agents) or not MIN_AGENTS <= self.num_agents <= MAX_AGENTS:
            raise ValueError(
                f"num_agents must be an int in [{MIN_AGENTS}, {MAX_AGENTS}], got {self.num_agents!r}"
            )
        for name in ("low", "high"):
            value = getattr(self, name)
            if not _is_int(value) or not MIN_OPERAND <= value <= MAX_OPERAND:
                raise ValueError(f"{name} must be an int in [{MIN_OPERAND}, {MAX_OPERAND}], got {value!r}")
        if self.low > self.high:
            raise ValueError(f"low must not exceed high, got low={self.low}, high={self.high}")
        if not self.operations or any(op not in OPERATIONS for op in self.operations):
            raise ValueError(f"operations must be a non-empty list of {OPERATIONS}, got {self.operations!r}")
        for name in ("correct_reward", "format_reward"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not _is_int(self.rounds) or self.rounds < 1:
            raise ValueError(f"rounds must be a positive int or None, got {self.rounds!r}")

    @classmethod
    def build(
        cls,
        *,
        num_agents: int,
        low: int,
        high: int,
        operations: str | Sequence[str],
        correct_reward: float,
        format_reward: float,
        rounds: int | None = None,
        max_cycles: int | None = None,
    ) -> TeamSumRules:
        """The rules from keyword arguments; one operator may be given as a bare string, and
        ``rounds=None`` is ``max_cycles`` when that is given (PettingZoo's convention), else 1."""
        ops = (operations,) if isinstance(operations, str) else tuple(operations)
        if rounds is None:
            rounds = max_cycles if isinstance(max_cycles, int) and max_cycles > 0 else 1
        return cls(num_agents, low, high, ops, correct_reward, format_reward, rounds)

    @property
    def agents(self) -> tuple[str, ...]:
        return AGENT_NAMES[: self.num_agents]


@dataclass(frozen=True)
class Verdict:
    """The team's result.

    Attributes:
        given: each agent's parsed value, None where its reply had no boxed integer.
        team_answer: the sum of every part's value.
        team_given: the sum of the given values; None unless every agent gave one.
        correct: every agent gave a value and ``team_given == team_answer``.
        reward: every agent's reward: ``correct_reward`` when correct, plus ``format_reward`` when every
            agent gave a boxed integer.
    """

    given: Mapping[str, int | None]
    team_answer: int
    team_given: int | None
    correct: bool
    reward: float


def judge(
    parts: Mapping[str, Part], replies: Mapping[str, str], *, correct_reward: float, format_reward: float
) -> Verdict:
    """The team's verdict on one reply per agent of ``parts``.

    Only the sum is checked, so errors that cancel (``+1`` from one member, ``-1`` from another) still
    earn the reward: it is the team's answer that is judged, as a team reward should be.
    """
    given = {agent: parse_value(replies[agent]) for agent in parts}
    team_answer = sum(part.value for part in parts.values())
    values = [value for value in given.values() if value is not None]
    team_given = sum(values) if len(values) == len(given) else None
    correct = team_given == team_answer
    reward = (correct_reward if correct else 0.0) + (format_reward if team_given is not None else 0.0)
    return Verdict(given, team_answer, team_given, correct, float(reward))


class TeamSumGame:
    """The game (:class:`~mrlm.envs.core.game.Game`) of ``mrlm/TeamSum-v0``: each round deals every
    agent a part, takes one reply per agent, and judges the team once every agent has replied; an
    episode is ``rules.rounds`` rounds."""

    def __init__(self, rules: TeamSumRules) -> None:
        self.rules = rules
        self._parts: dict[str, Part] | None = None
        self._rng: np.random.Generator | None = None
        self.replies: dict[str, str] = {}
        self.verdict: Verdict | None = None  # of the last round judged
        self.judged = 0  # rounds judged in this episode

    @property
    def agents(self) -> tuple[str, ...]:
        return self.rules.agents

    @property
    def parts(self) -> dict[str, Part]:
        """Each agent's part of this episode; RuntimeError before the first reset."""
        if self._parts is None:
            raise RuntimeError("call reset() first")
        return self._parts

    @property
    def done(self) -> bool:
        return self.judged >= self.rules.rounds

    def start(
        self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Deal one part per agent, drawn in agent order from ``rng``; return the reset infos."""
        self._rng, self.judged, self.verdict = rng, 0, None
        self._deal(rng)
        prompt = system_prompt(self.rules.num_agents)
        return {agent: {"system_prompt": prompt} for agent in self.agents}

    def _deal(self, rng: np.random.Generator) -> None:
        rules = self.rules
        self._parts = {
            agent: draw_part(rng, rules.low, rules.high, rules.operations) for agent in self.agents
        }
        self.replies = {}

    def submit(self, agent: str, reply: str) -> bool:
        """Take ``agent``'s reply; True when it was the last one and the team has been judged."""
        if self.done:
            raise RuntimeError("the game is over")
        if agent not in self.parts or agent in self.replies:
            raise ValueError(f"{agent!r} is not an agent waiting to reply")
        self.replies[agent] = reply
        if len(self.replies) < len(self.parts):
            return False
        self.verdict = judge(
            self.parts,
            self.replies,
            correct_reward=self.rules.correct_reward,
            format_reward=self.rules.format_reward,
        )
        self.judged += 1
        return True

    def move(self, agent: str, action: str) -> Outcome:
        """Take one reply; after the last one of a round every agent gets the team's reward, and the
        next round's parts are dealt unless that round was the last."""
        if not self.submit(agent, action):
            return Outcome()
        verdict = self.verdict
        assert verdict is not None and self._rng is not None
        outcome = Outcome(
            rewards=dict.fromkeys(self.parts, verdict.reward),
            done=self.done,
            infos=self.infos(),
            notes=[("team", self.summary())],
        )
        if not self.done:
            self._deal(self._rng)
        return outcome

    def play(self, actions: Mapping[str, str]) -> Outcome:
        """Every agent's reply at once: no agent sees another's, so this is the replies in turn."""
        return play_in_turn(self, actions)

    def observe(self, agent: str) -> str:
        """``agent``'s question, after whether the team was right in the last round (if any); at the
        end, only that."""
        if self.verdict is None:
            return self.parts[agent].question
        if self.verdict.correct:
            result = CORRECT
        else:
            result = WRONG if self.verdict.team_given is not None else MISSING
        return result if self.done else f"{result}\n\n{self.parts[agent].question}"

    def render(self) -> None:
        """None: the env's transcript (replies, then the team's result) is the picture."""
        return None

    def summary(self) -> str:
        """One line of the team's result for the transcript; empty before the verdict."""
        verdict = self.verdict
        if verdict is None:
            return ""
        return f"given {verdict.team_given}, answer {verdict.team_answer}: reward {verdict.reward:g}"

    def infos(self) -> dict[str, dict[str, Any]]:
        """Per agent after the verdict: its part's ``answer`` and ``given`` value, and the team's."""
        verdict = self.verdict
        if verdict is None:
            return {}
        return {
            agent: {
                "answer": part.value,
                "given": verdict.given[agent],
                "team_answer": verdict.team_answer,
                "team_given": verdict.team_given,
                "correct": verdict.correct,
            }
            for agent, part in self.parts.items()
        }


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
