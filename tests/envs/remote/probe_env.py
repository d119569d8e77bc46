"""A small text env that can be told to be slow, to fail, or to log its closing; for server tests.

:func:`register_probe_envs` registers ``mrlm-test/Probe-v0`` and the toy games of
``tests.envs.toy_games``; the tests call it when they run (registering at import would add the probe
to the suites that parametrize over every registered env), and ``tests.envs.remote.serve_probe`` calls
it on import, for a server started in a subprocess with ``--import``.

``ProbeEnv``: the observation after a reset is ``"probe <n>"`` with ``n`` drawn from the seed; each
step echoes the action with reward ``len(action)``; the episode ends after ``max_turns`` steps. The
action ``"boom"`` raises ``RuntimeError`` inside ``step``; ``delay_s`` makes every step sleep; each
``close()`` appends a line to ``close_log`` when given.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from mrlm.envs import Feedback, TextEnv, register_env
from mrlm.envs.registry import env_entry
from mrlm.envs.server.client_args import RENDER_MODE, ClientArgs, Float, Int, Limit, Str
from tests.envs.toy_games import register_toy_games

PROBE_ID = "mrlm-test/Probe-v0"

#: What clients may set. ``close_log`` is a path the probe writes to: a test env may let clients name
#: one; an env for real use would not.
PROBE_ARGS = ClientArgs(
    {
        "max_turns": Int(1, 1_000),
        "delay_s": Float(0.0, 60.0),
        "close_log": Str(4096, optional=True),
        "render_mode": RENDER_MODE,
        "max_action_length": Limit(1),
    }
)


class ProbeEnv(TextEnv):
    def __init__(
        self,
        *,
        max_turns: int = 3,
        delay_s: float = 0.0,
        close_log: str | None = None,
        render_mode: str | None = None,
        max_action_length: int = 1024,
    ) -> None:
        super().__init__(max_turns=max_turns, render_mode=render_mode, max_action_length=max_action_length)
        self.delay_s = delay_s
        self.close_log = close_log
        self.number = 0

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.number = int(rng.integers(0, 1_000_000))
        return f"probe {self.number}", {
            "number": self.number,
            "options": options,
            "nested": {"list": [1, 2.5]},
        }

    def _respond(self, action: str) -> Feedback:
        if self.delay_s:
            time.sleep(self.delay_s)
        if action == "boom":
            raise RuntimeError("boom requested")
        return Feedback(
            observation=f"echo {action}", reward=float(len(action)), done=False, info={"n": self.number}
        )

    def close(self) -> None:
        if self.close_log:
            with Path(self.close_log).open("a") as log:
                log.write(f"closed {self.number}\n")
        super().close()


def register_probe_envs() -> None:
    """Register the probe env and the toy games, unless this process already has them."""
    if not _registered(PROBE_ID):
        register_env(
            PROBE_ID,
            description="Echoes actions; slow, failing or logging on demand.",
            gymnasium_entry_point=f"{__name__}:ProbeEnv",
            client_args=PROBE_ARGS,
        )
    if not _registered("mrlm-test/GuessWord-v0"):
        register_toy_games()


def _registered(env_id: str) -> bool:
    try:
        env_entry(env_id)
    except KeyError:
        return False
    return True
