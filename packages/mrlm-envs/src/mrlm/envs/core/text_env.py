"""A base class for single-agent text environments, single-turn or multi-turn.

A subclass says what a task is and how a reply is judged; :class:`TextEnv` does the Gymnasium
bookkeeping that the checkers demand and that is easy to get wrong: seeding through ``np_random``,
Python ``bool`` flags, a fresh ``info`` dict on every call, input validation, the turn budget, a
transcript for ``render``.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium
import numpy as np

from mrlm.envs.core.reset_options import reset_options
from mrlm.envs.core.spaces import DEFAULT_MAX_ACTION_LENGTH, DEFAULT_MAX_OBSERVATION_LENGTH, TextSpace

RENDER_MODES = ("ansi", "human")


@dataclass(frozen=True)
class Feedback:
    """What the environment answers to one reply.

    Attributes:
        observation: the text the agent sees next (feedback, or a closing message).
        reward: the reward of this reply.
        done: True when the task is over (solved, failed for good, or no turns left is decided by the
            base class; a subclass sets it for endings of its own).
        info: structured extras for this step (reward components, test results, ...). Copied, so the
            subclass may reuse its own dicts.
    """

    observation: str
    reward: float
    done: bool
    info: Mapping[str, Any] = field(default_factory=dict)


class TextEnv(gymnasium.Env[str, str], abc.ABC):
    """A text environment: observations and actions are ``str``.

    The observation is what the environment says this turn: the task on ``reset``, then feedback after
    each reply. The agent keeps the conversation. ``reset`` returns ``info["system_prompt"]`` when the
    subclass provides one.

    An episode ends with ``terminated=True`` when the subclass says the task is over or when the agent
    has used its ``max_turns`` replies: the turn budget is a rule of the task, not a time limit, so it is
    a termination. ``truncated`` stays False unless a wrapper such as ``TimeLimit`` sets it.

    Subclasses implement :meth:`_start` and :meth:`_respond`; both may read :attr:`turn` and
    :attr:`turns_left`.

    Args:
        max_turns: replies the agent may give per episode (1 for single-turn tasks).
        render_mode: ``"ansi"`` (``render()`` returns the transcript) or ``"human"`` (prints it).
        max_observation_length: bound of the observation space, in characters.
        max_action_length: bound of the action space, in characters; longer replies are refused.
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 (Gymnasium's contract)

    def __init__(
        self,
        *,
        max_turns: int = 1,
        render_mode: str | None = None,
        max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH,
        max_action_length: int = DEFAULT_MAX_ACTION_LENGTH,
    ) -> None:
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive int, got {max_turns!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.max_turns = max_turns
        self.render_mode = render_mode
        self.observation_space: TextSpace = TextSpace(max_observation_length)
        self.action_space: TextSpace = TextSpace(max_action_length)
        self._turn = 0
        self._started = False
        self._finished = False
        self._transcript: list[tuple[str, str]] = []
        self._reset_seed: int | None = None

    # ----------------------------------------------------------------------------------------------
    # What a subclass writes

    @abc.abstractmethod
    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Draw a task with ``rng`` (and :attr:`_reset_seed`, the seed of this ``reset`` or None, where a
        task is chosen from a collection: see ``mrlm.envs.core.task_choice``); return its first
        observation and the reset ``info``."""

    @abc.abstractmethod
    def _respond(self, action: str) -> Feedback:
        """Judge the agent's reply. :attr:`turn` already counts it."""

    # ----------------------------------------------------------------------------------------------
    # The Gymnasium API

    @property
    def turn(self) -> int:
        """Replies received in this episode."""
        return self._turn

    @property
    def turns_left(self) -> int:
        """Replies the agent may still give in this episode."""
        return self.max_turns - self._turn

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._reset_seed = seed
        self._turn = 0
        self._started = True
        self._finished = False
        observation, info = self._start(self.np_random, reset_options(options))
        self._transcript = [("env", observation)]
        self._render_human()
        return observation, copy.deepcopy(dict(info))

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{type(self).__name__}.step() called before reset()")
        if self._finished:
            raise RuntimeError(f"{type(self).__name__}.step() called after the episode ended; call reset()")
        self._check_action(action)
        self._turn += 1
        feedback = self._respond(action)
        terminated = bool(feedback.done) or self._turn >= self.max_turns
        self._finished = terminated
        info = copy.deepcopy(dict(feedback.info))
        info.setdefault("turn", self._turn)
        self._transcript += [("agent", action), ("env", feedback.observation)]
        self._render_human(entries=2)
        return feedback.observation, float(feedback.reward), terminated, False, info

    def render(self) -> str | None:
        """The transcript in ``"ansi"`` mode; printed in ``"human"`` mode (which returns None), where
        ``reset`` and ``step`` also print each new entry as it comes."""
        if self.render_mode == "ansi":
            return self._transcript_text()
        if self.render_mode == "human":
            print(self._transcript_text())
        return None

    # ----------------------------------------------------------------------------------------------

    def _check_action(self, action: object) -> None:
        if not isinstance(action, str):
            raise TypeError(f"the action must be a str (the agent's reply), got {type(action).__name__}")
        if len(action) > self.action_space.max_length:
            raise ValueError(
                f"the action has {len(action)} characters; this env accepts at most "
                f"{self.action_space.max_length} (max_action_length)"
            )

    def _transcript_text(self) -> str:
        return "".join(f"[{speaker}]\n{text}\n" for speaker, text in self._transcript)

    def _render_human(self, entries: int = 1) -> None:
        if self.render_mode == "human":
            for speaker, text in self._transcript[-entries:]:
                print(f"[{speaker}]\n{text}")
