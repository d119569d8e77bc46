"""Write your own text environments, register them, and run them.

One agent: subclass ``TextEnv``. ``ReverseWordEnv`` asks the agent to reverse a seeded word, allows
three attempts and tells the agent how many letters were right. It passes Gymnasium's ``check_env``
and is made by id like any built-in env.

Several agents: write the rules once as a ``Game`` (``agents``, ``start``, ``observe``, ``move``,
``play``, ``render``), and ``GameAECEnv``/``GameParallelEnv`` give its two PettingZoo forms.
``HigherCardGame`` deals each player a seeded card; each says "raise" or "fold", and the higher card
among those who raise wins. It passes PettingZoo's ``api_test`` and ``parallel_api_test``.

Run: ``uv run python examples/custom_env.py``
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test

import mrlm.envs
from mrlm.envs import Feedback, GameAECEnv, GameParallelEnv, Outcome, TextEnv, play_in_turn

WORDS = ("planet", "reward", "policy", "gradient", "token", "agent")


class ReverseWordEnv(TextEnv):
    """Reverse a word; reward 1 for the exact reversal, partial credit in ``info``."""

    def __init__(self, *, max_turns: int = 3, render_mode: str | None = None) -> None:
        super().__init__(max_turns=max_turns, render_mode=render_mode)
        self.word = ""

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.word = str(rng.choice(WORDS))
        return f"Reverse the word: {self.word}", {"system_prompt": "Answer with the reversed word only."}

    def _respond(self, action: str) -> Feedback:
        target = self.word[::-1]
        guess = action.strip()
        right = sum(a == b for a, b in zip(guess, target, strict=False))
        if guess == target:
            return Feedback("Correct.", 1.0, done=True, info={"letters_right": right})
        return Feedback(
            f"{right} of {len(target)} letters are right.", 0.0, done=False, info={"letters_right": right}
        )


class HigherCardGame:
    """Two players, one card each (1-10, drawn from the seed); each replies "raise" or "fold".

    Those who raise show their cards: the higher card wins +1 and the other raiser gets -1 (a tie pays
    nothing), and a player who folds pays 0.1 whatever happens. One round, so one move each.
    """

    agents = ("alice", "bob")

    def __init__(self) -> None:
        self.cards: dict[str, int] = {}
        self.replies: dict[str, str] = {}

    def start(self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]) -> dict[str, Any]:
        self.cards = {agent: int(rng.integers(1, 11)) for agent in self.agents}
        self.replies = {}
        return {agent: {"card": card} for agent, card in self.cards.items()}

    def observe(self, agent: str) -> str:
        if len(self.replies) < len(self.agents):
            return f"Your card is {self.cards[agent]}. Reply raise or fold."
        return f"Cards: {self.cards}. Replies: {self.replies}."

    def move(self, agent: str, action: str) -> Outcome:
        self.replies[agent] = "raise" if action.strip().lower() == "raise" else "fold"
        if len(self.replies) < len(self.agents):
            return Outcome()  # the other player has not replied; nobody sees this reply
        raisers = [a for a in self.agents if self.replies[a] == "raise"]
        rewards = {a: -0.1 for a in self.agents if a not in raisers}
        if len(raisers) == 2 and self.cards["alice"] != self.cards["bob"]:
            winner = max(raisers, key=self.cards.__getitem__)
            rewards.update({a: 1.0 if a == winner else -1.0 for a in raisers})
        return Outcome(
            rewards=rewards, done=True, infos={a: {"cards": dict(self.cards)} for a in self.agents}
        )

    def play(self, actions: Mapping[str, str]) -> Outcome:
        return play_in_turn(self, actions)  # no reply is seen before both are in

    def render(self) -> None:
        return None  # the env's transcript of replies is the picture


def main() -> None:
    mrlm.envs.register_env(
        "examples/ReverseWord-v0",
        description="Reverse a word in up to three attempts.",
        gymnasium_entry_point=ReverseWordEnv,
    )
    env = mrlm.envs.make("examples/ReverseWord-v0", render_mode="ansi")
    check_env(env.unwrapped, skip_render_check=True)

    observation, info = env.reset(seed=0)
    word = observation.rsplit(" ", 1)[-1]
    for attempt in (word, word[::-1]):  # first a wrong reply, then the right one
        observation, reward, terminated, _, info = env.step(attempt)
        print(f"reply={attempt!r} -> {observation!r} reward={reward} terminated={terminated} info={info}")
    print(env.render())
    assert terminated and reward == 1.0

    # Both PettingZoo forms of one game, checked by PettingZoo's own tests (which also suggest numeric
    # spaces and agent names such as player_0: advice for other kinds of env).
    warnings.filterwarnings("ignore", category=UserWarning, module="pettingzoo")
    api_test(GameAECEnv(HigherCardGame()), num_cycles=10)
    parallel_api_test(GameParallelEnv(HigherCardGame()), num_cycles=10)
    table = GameParallelEnv(HigherCardGame(), render_mode="ansi")
    _, infos = table.reset(seed=1)
    _, rewards, terminations, _, _ = table.step({"alice": "raise", "bob": "raise"})
    print(f"cards={infos['alice']['card']},{infos['bob']['card']} rewards={rewards}")
    assert all(terminations.values()) and sorted(rewards.values()) in ([-1.0, 1.0], [0.0, 0.0])


if __name__ == "__main__":
    main()
