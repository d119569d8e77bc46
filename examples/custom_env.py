"""Write your own text environment by subclassing ``TextEnv``, register it, and run it.

The env below asks the agent to reverse a seeded word, allows three attempts and tells the agent how
many letters were right. It passes Gymnasium's ``check_env`` and is made by id like any built-in env.

Run: ``uv run python examples/custom_env.py``
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils.env_checker import check_env

import mrlm.envs
from mrlm.envs import Feedback, TextEnv

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


if __name__ == "__main__":
    main()
