"""Small multi-agent games with known rewards and a generator that replies by rule, to test exactly.

``Coordinate`` (parallel, one or more rounds): each agent names a digit; an agent scores 1 when every
agent named the same digit, plus a tenth of its own digit. ``Relay`` (AEC): agents take turns for
``rounds`` rounds; a move pays its mover a tenth of the move number and every other agent -0.01, and
the last move pays everyone +1.
``DigitGenerator`` answers the ``k``-th copy of a prompt within one call with the digit ``k`` (so
sample ``j`` of an agent says ``j``), and counts its calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from mrlm.envs import Outcome, TextAECEnv, TextParallelEnv
from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, SamplingParams


class Coordinate(TextParallelEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi"],
        "name": "coordinate",
        "is_parallelizable": True,
    }

    def __init__(self, num_agents: int = 2, rounds: int = 1) -> None:
        super().__init__([f"p{i}" for i in range(num_agents)])
        self.rounds = rounds
        self.round = 0
        self.topic = 0
        self.last: dict[str, str] = {}

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        self.topic, self.round, self.last = int(rng.integers(100, 1000)), 0, {}
        return {agent: {"system_prompt": "Name a digit.", "topic": self.topic} for agent in self.agents}

    def _observe(self, agent: str) -> str:
        return f"Task {self.topic}, round {self.round}; you are {agent}; others said {self.last}."

    def _act(self, actions: Mapping[str, str]) -> Outcome:
        digits = {agent: _digit(text) for agent, text in actions.items()}
        same = len(set(digits.values())) == 1
        self.round += 1
        self.last = dict(actions)
        rewards = {agent: float(same) + 0.1 * digits[agent] for agent in actions}
        infos = {agent: {"digit": digits[agent], "same": same} for agent in actions}
        return Outcome(rewards=rewards, done=self.round >= self.rounds, infos=infos)


class Relay(TextAECEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi"],
        "name": "relay",
        "is_parallelizable": False,
    }

    def __init__(self, num_agents: int = 2, rounds: int = 2) -> None:
        super().__init__([f"r{i}" for i in range(num_agents)])
        self.rounds = rounds
        self.moves: list[str] = []

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        self.moves = []
        return {agent: {"position": i} for i, agent in enumerate(self.agents)}

    def _observe(self, agent: str) -> str:
        return f"{agent}: moves so far {self.moves}"

    def _act(self, agent: str, action: str) -> Outcome:
        self.moves.append(action)
        move = len(self.moves)
        rewards = {other: -0.01 for other in self.agents if other != agent}
        rewards[agent] = 0.1 * move
        done = move >= self.rounds * len(self.agents)
        if done:
            rewards = {other: reward + 1.0 for other, reward in rewards.items()}
        return Outcome(rewards=rewards, done=done, infos={agent: {"move": move}})


def _digit(text: str) -> int:
    digits = [ch for ch in text if ch.isdigit()]
    return int(digits[0]) if digits else 0


class DigitGenerator:
    """The ``k``-th copy of a prompt in a call gets the reply ``"k"`` (then ``<|im_end|>``)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.end_id = tokenizer.convert_tokens_to_ids(IM_END)
        self.calls: list[int] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        self.calls.append(len(prompts))
        seen: dict[tuple[int, ...], int] = {}
        out = []
        for prompt in prompts:
            k = seen[tuple(prompt)] = seen.get(tuple(prompt), -1) + 1
            ids = [*self.tokenizer.encode(str(k % 10)), self.end_id]
            out.append(Completion(ids, [-0.5] * len(ids), "stop"))
        return out
