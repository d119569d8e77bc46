"""A one-reply text env for the trainer's tests: each test's env says only what makes it differ."""

from __future__ import annotations

from typing import Any

import gymnasium

from mrlm.envs import TextSpace


class OneTurnEnv(gymnasium.Env[str, str]):
    """After every reset: ``prompt`` with ``reset_info``; the reply ends the episode, paid
    :meth:`reward` (of the reply and the reset's seed, ``self.seed``)."""

    observation_space = TextSpace(max_length=64)
    action_space = TextSpace(max_length=4096)
    prompt = "What is 1 + 1?"
    reset_info: dict[str, Any] = {}  # noqa: RUF012 (read, never changed)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.seed = seed
        return self.prompt, dict(self.reset_info)

    def step(self, action: str) -> tuple[str, Any, bool, bool, dict[str, Any]]:
        return "", self.reward(action), True, False, {}

    def reward(self, action: str) -> Any:
        return 0.0
