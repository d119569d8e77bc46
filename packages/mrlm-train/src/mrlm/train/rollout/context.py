"""What every way of playing shares: the policies, the limits, the worker threads, one collect call.

:class:`Rollout` is handed by the engine to the players (:mod:`~mrlm.train.rollout.play_rounds`,
:mod:`~mrlm.train.rollout.play_aec`, :mod:`~mrlm.train.rollout.cross`); :class:`Episode` is one joint
episode in progress, one :class:`~mrlm.train.rollout.seat.Seat` per agent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mrlm.train.generation.base import Completion
from mrlm.train.rollout.policies import PolicyTable
from mrlm.train.rollout.prompts import SystemPrompt, default_system_prompt
from mrlm.train.rollout.rounds import Agent
from mrlm.train.rollout.sampler import Request, generate_round
from mrlm.train.rollout.seat import Seat
from mrlm.train.rollout.trajectory import Truncation

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass(frozen=True)
class Task:
    """One joint episode to play: its seed, its id, and its index within its group."""

    seed: int
    episode: int
    sample: int


@dataclass
class Episode:
    """A joint episode in progress: its env and the seat of each agent, in the env's agent order."""

    env: Any
    task: Task
    env_id: str
    seats: dict[Agent, Seat] = field(default_factory=dict)
    done: bool = False

    def cut(self, why: Truncation, observations: dict[Agent, str] | None = None) -> None:
        """End the episode for every agent still playing (``why`` says why)."""
        for agent, seat in self.seats.items():
            if not seat.done:
                seat.cut(why, (observations or {}).get(agent))
        self.done = True


@dataclass
class Rollout:
    """The settings of one collect call."""

    table: PolicyTable
    system_prompt: SystemPrompt | None
    """None: :func:`~mrlm.train.rollout.prompts.default_system_prompt`, the agent named as its
    policy's ``names_agent`` says."""
    max_turns: int
    max_prompt_tokens: int | None
    step_workers: int
    call: int
    """The engine's collect count, which seeds the sampling noise."""

    def seat(self, agent: Agent, task: Task, reset_info: dict[str, Any]) -> Seat:
        """A new seat for ``agent``, played by its policy."""
        return Seat(agent, self.table.of(agent), task.seed, task.episode, task.sample, dict(reset_info))

    def open(self, seat: Seat, observation: str) -> bool:
        """Open ``seat``'s conversation with its system prompt and ``observation``; False when too long."""
        tokenizer = self.table[seat.policy].tokenizer
        if self.system_prompt is None:
            names_agent = self.table[seat.policy].names_agent
            prompt = default_system_prompt(seat.agent, seat.reset_info, names_agent=names_agent)
        else:
            prompt = self.system_prompt(seat.agent, seat.reset_info)
        return seat.open(tokenizer, prompt, observation, self.max_prompt_tokens)

    def generate(self, seats: Sequence[Seat], turn: int) -> list[Completion]:
        """A completion for each seat's conversation, one generate call per policy."""
        requests: list[Request] = []
        for seat in seats:
            assert seat.conversation is not None
            requests.append((seat.policy, seat.conversation.token_ids))
        return generate_round(self.table, requests, self.call, turn)

    def map(self, fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``fn`` over ``items`` on ``step_workers`` threads (env calls: resets, steps, replays)."""
        if self.step_workers == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(self.step_workers) as pool:
            return list(pool.map(fn, items))
