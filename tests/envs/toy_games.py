"""Two small multi-agent games written on the base classes, to test the bases against PettingZoo.

``GuessWordAEC``: agents take turns guessing a secret word drawn from the seed; a right guess wins +1
(the others -1) and ends the game, which otherwise ends after ``rounds`` rounds with 0 for all.
``GuessNumberParallel``: every agent names a number each step; the closest to the secret scores +1,
and the game ends after ``rounds`` steps (or at an exact guess, unless ``stop_on_exact=False``).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from mrlm.envs import Outcome, TextAECEnv, TextParallelEnv, register_env

WORDS = ("apple", "river", "stone", "cloud", "ember", "maple", "tiger", "oasis")


class GuessWordAEC(TextAECEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "guess_word_v0",
        "is_parallelizable": False,
    }

    def __init__(
        self,
        *,
        rounds: int = 6,
        num_agents: int = 2,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            [f"player_{i}" for i in range(num_agents)], max_cycles=max_cycles, render_mode=render_mode
        )
        self.rounds = rounds
        self.secret = ""
        self.last_guess: dict[str, str] = {}
        self.moves = 0

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        self.secret = str(rng.choice(WORDS))
        self.last_guess = {}
        self.moves = 0
        return {
            agent: {"hint": f"{len(self.secret)} letters", "first": i == 0}
            for i, agent in enumerate(self.agents)
        }

    def _observe(self, agent: str) -> str:
        others = {a: g for a, g in self.last_guess.items() if a != agent}
        return f"Guess the {len(self.secret)}-letter word. Last guesses: {others}"

    def _act(self, agent: str, action: str) -> Outcome:
        self.last_guess[agent] = action
        self.moves += 1
        if action.strip().lower() == self.secret:
            rewards = {a: (1.0 if a == agent else -1.0) for a in self.agents}
            return Outcome(rewards=rewards, done=True, infos={agent: {"won": True}})
        done = self.moves >= self.rounds * len(self.agents)
        return Outcome(rewards={agent: -0.01}, done=done, infos={agent: {"won": False, "move": self.moves}})


class GuessNumberParallel(TextParallelEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "guess_number_v0",
        "is_parallelizable": True,
    }

    def __init__(
        self,
        *,
        rounds: int = 6,
        num_agents: int = 2,
        stop_on_exact: bool = True,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            [f"player_{i}" for i in range(num_agents)], max_cycles=max_cycles, render_mode=render_mode
        )
        self.rounds = rounds
        self.stop_on_exact = stop_on_exact
        self.secret = 0
        self.step_count = 0
        self.feedback: dict[str, str] = {}

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        self.secret = int(rng.integers(0, 100))
        self.step_count = 0
        self.feedback = dict.fromkeys(self.agents, "Name a number from 0 to 99.")
        return {agent: {"range": [0, 99]} for agent in self.agents}

    def _observe(self, agent: str) -> str:
        return self.feedback[agent]

    def _act(self, actions: Mapping[str, str]) -> Outcome:
        self.step_count += 1
        distances = {}
        for agent, text in actions.items():
            digits = "".join(ch for ch in text if ch.isdigit())[:3]
            distances[agent] = abs(int(digits) - self.secret) if digits else 1000
            self.feedback[agent] = "higher" if digits and int(digits) < self.secret else "lower or equal"
        best = min(distances.values())
        rewards = {agent: (1.0 if d == best else 0.0) for agent, d in distances.items()}
        infos = {agent: {"distance": d, "exact": d == 0} for agent, d in distances.items()}
        return Outcome(
            rewards=rewards,
            done=self.step_count >= self.rounds or (self.stop_on_exact and best == 0),
            infos=infos,
        )


def aec_env(**kwargs: Any) -> GuessWordAEC:
    return GuessWordAEC(**kwargs)


def parallel_env(**kwargs: Any) -> GuessNumberParallel:
    return GuessNumberParallel(**kwargs)


#: A module-like object for PettingZoo's max_cycles_test, which calls env() and parallel_env().
def as_module(aec_factory: Any, parallel_factory: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(env=aec_factory, parallel_env=parallel_factory)


def register_toy_games() -> None:
    register_env(
        "mrlm-test/GuessWord-v0",
        description="Take turns guessing a secret word.",
        aec_entry_point=f"{__name__}:aec_env",
    )
    register_env(
        "mrlm-test/GuessNumber-v0",
        description="Everyone names a number; closest wins.",
        parallel_entry_point=f"{__name__}:parallel_env",
    )
