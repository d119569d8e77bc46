"""Base classes for multi-agent text environments on PettingZoo's AEC and Parallel APIs.

A subclass describes the game; the base classes keep PettingZoo's bookkeeping right by construction:
spaces built once in ``__init__`` (the checkers require the same object on every call), Python ``bool``
flags, fresh ``info`` dicts, seeding through ``np_random``, accumulated AEC rewards, dead agents
stepped with ``None`` and removed, ``agents`` emptied at the end of an episode, and ``max_cycles``
truncation.

Observations are ``{"text": str}`` (see :func:`~mrlm.envs.core.spaces.text_observation_space`);
actions are ``str``.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv

from mrlm.envs.core.reset_options import reset_options
from mrlm.envs.core.spaces import (
    DEFAULT_MAX_ACTION_LENGTH,
    DEFAULT_MAX_OBSERVATION_LENGTH,
    TextSpace,
    text_observation_space,
)
from mrlm.envs.core.text_env import RENDER_MODES

TextObservation = dict[str, str]
#: What a Parallel ``step`` returns: observations, rewards, terminations, truncations and infos by agent.
ParallelStep = tuple[
    dict[str, TextObservation], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
]


@dataclass(frozen=True)
class Outcome:
    """What the game answers to one move (AEC) or one joint move (parallel).

    Attributes:
        rewards: reward of this step per agent; agents not named get 0.
        done: True when the game is over for every agent.
        infos: extras per agent; agents not named get ``{}``. Copied, so the subclass may reuse dicts.
        notes: ``(speaker, text)`` lines the transcript (``render``) adds after the move, such as a
            round's score.
    """

    rewards: Mapping[str, float] = field(default_factory=dict)
    done: bool = False
    infos: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    notes: Sequence[tuple[str, str]] = ()


class _TextAgents(abc.ABC):
    """Spaces, validation, transcript and the game hooks shared by both APIs.

    Args:
        agents: the agent names, in turn order.
        max_cycles: rounds after which the episode is truncated (AEC: each agent acting once;
            parallel: steps); None for none.
        render_mode: ``"ansi"`` or ``"human"``.
        max_observation_length: bound of the observation space, in characters.
        max_action_length: bound of the action space, in characters; longer replies are refused.
    """

    metadata: ClassVar[dict[str, Any]]
    possible_agents: list[str]
    agents: list[str]
    render_mode: str | None

    def __init__(
        self,
        agents: Sequence[str],
        *,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_observation_length: int = DEFAULT_MAX_OBSERVATION_LENGTH,
        max_action_length: int = DEFAULT_MAX_ACTION_LENGTH,
    ) -> None:
        if len(agents) == 0 or len(set(agents)) != len(agents):
            raise ValueError(f"agents must be distinct names, got {list(agents)!r}")
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive int or None, got {max_cycles!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.possible_agents = list(agents)
        self.agents = []
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.observation_spaces: dict[str, spaces.Space[Any]] = {
            agent: text_observation_space(max_observation_length) for agent in agents
        }
        self.action_spaces: dict[str, spaces.Space[Any]] = {
            agent: TextSpace(max_action_length) for agent in agents
        }
        self._max_action_length = max_action_length
        self._transcript: list[tuple[str, str]] = []
        self._np_random: np.random.Generator | None = None
        self._reset_seed: int | None = None
        self._init_state()

    @abc.abstractmethod
    def _init_state(self) -> None:
        """Set the API's own state (before the first reset)."""

    @abc.abstractmethod
    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        """Set up a new game with ``rng`` (``self._reset_seed`` is the seed given to ``reset``, or None);
        return the reset info of each agent (may be empty)."""

    @abc.abstractmethod
    def _observe(self, agent: str) -> str:
        """The text ``agent`` sees now."""

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The env's random generator, seeded by ``reset(seed=...)``."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    def _seed(self, seed: int | None) -> None:
        self._reset_seed = seed
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)

    def _check_action(self, agent: str, action: object) -> str:
        if not isinstance(action, str):
            raise TypeError(f"the action of {agent!r} must be a str, got {type(action).__name__}")
        if len(action) > self._max_action_length:
            raise ValueError(
                f"the action of {agent!r} has {len(action)} characters; at most "
                f"{self._max_action_length} are accepted (max_action_length)"
            )
        return action

    def render(self) -> str | None:
        """The transcript in ``"ansi"`` mode; printed in ``"human"`` mode (which returns None)."""
        text = "".join(f"[{speaker}]\n{line}\n" for speaker, line in self._transcript)
        if self.render_mode == "ansi":
            return text
        if self.render_mode == "human":
            print(text)
        return None

    def close(self) -> None:
        """Release resources; the base holds none. PettingZoo requires it wherever render() exists."""
        return None

    def _record(self, speaker: str, text: str) -> None:
        self._transcript.append((speaker, text))

    def _apply(self, outcome: Outcome) -> Outcome:
        """Take ``outcome``'s transcript notes; return it."""
        self._transcript.extend(outcome.notes)
        return outcome


class TextAECEnv(_TextAgents, AECEnv[str, TextObservation, str], abc.ABC):
    """A turn-based text game: one agent acts at a time.

    Subclasses implement :meth:`_start`, :meth:`_observe` and :meth:`_act`, and may override
    :meth:`_next_agent` (round robin by default). The game ends when :meth:`_act` returns
    ``done=True`` (every agent terminated) or after ``max_cycles`` full rounds (every agent truncated).

    Args:
        agents: the agent names, in turn order.
        max_cycles: rounds (each agent acting once) after which the episode is truncated; None for none.
        render_mode: ``"ansi"`` or ``"human"``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "name": "text_aec"}

    def _init_state(self) -> None:
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection = self.possible_agents[0]
        self._moves = 0

    # What a subclass writes -----------------------------------------------------------------------

    @abc.abstractmethod
    def _act(self, agent: str, action: str) -> Outcome:
        """Apply ``agent``'s move."""

    def _next_agent(self, agent: str) -> str:
        """Who moves after ``agent``: the next live agent in turn order."""
        order = self.agents
        return order[(order.index(agent) + 1) % len(order)]

    # The AEC API ----------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._seed(seed)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._transcript = []
        self._moves = 0
        self._skip_agent_selection = None
        reset_infos = self._start(self.np_random, reset_options(options))
        self.infos = {agent: copy.deepcopy(dict(reset_infos.get(agent, {}))) for agent in self.agents}
        self.agent_selection = self.agents[0]

    def observe(self, agent: str) -> TextObservation:
        if agent not in self.possible_agents:
            raise KeyError(f"no agent {agent!r} in this env; its agents are {self.possible_agents}")
        return {"text": self._observe(agent)}

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if not self.agents:
            raise RuntimeError("step() called with no live agents; call reset()")
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        move = self._check_action(agent, action)
        self._record(agent, move)
        self._cumulative_rewards[agent] = 0.0
        outcome = self._apply(self._act(agent, move))
        self._moves += 1
        self.rewards = {a: float(outcome.rewards.get(a, 0.0)) for a in self.agents}
        self.infos = {a: copy.deepcopy(dict(outcome.infos.get(a, {}))) for a in self.agents}
        if outcome.done:
            self.terminations = dict.fromkeys(self.agents, True)
        elif self.max_cycles is not None and self._moves >= self.max_cycles * len(self.agents):
            self.truncations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        self.agent_selection = self._next_agent(agent)
        if outcome.done or any(self.truncations.values()):
            self._deads_step_first()


class TextParallelEnv(_TextAgents, ParallelEnv[str, TextObservation, str], abc.ABC):
    """A simultaneous-move text game: every live agent acts at each step.

    Subclasses implement :meth:`_start`, :meth:`_observe` and :meth:`_act`. The game ends when
    :meth:`_act` returns ``done=True`` (every agent terminated) or after ``max_cycles`` steps (every agent
    truncated); ``agents`` is then empty.

    Args:
        agents: the agent names.
        max_cycles: steps after which the episode is truncated; None for none.
        render_mode: ``"ansi"`` or ``"human"``.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "text_parallel",
        "is_parallelizable": True,
    }

    def _init_state(self) -> None:
        self._steps = 0

    # What a subclass writes -----------------------------------------------------------------------

    @abc.abstractmethod
    def _act(self, actions: Mapping[str, str]) -> Outcome:
        """Apply the joint move (one action per live agent)."""

    # The Parallel API -----------------------------------------------------------------------------

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, TextObservation], dict[str, dict[str, Any]]]:
        self._seed(seed)
        self.agents = list(self.possible_agents)
        self._transcript = []
        self._steps = 0
        reset_infos = self._start(self.np_random, reset_options(options))
        observations = {agent: {"text": self._observe(agent)} for agent in self.agents}
        infos = {agent: copy.deepcopy(dict(reset_infos.get(agent, {}))) for agent in self.agents}
        return observations, infos

    def step(self, actions: Mapping[str, str]) -> ParallelStep:
        if not self.agents:
            raise RuntimeError("step() called with no live agents; call reset()")
        if not isinstance(actions, Mapping):
            raise TypeError(f"step() takes a dict of each live agent's action, got {type(actions).__name__}")
        unknown = sorted(set(actions) - set(self.agents), key=repr)
        missing = [agent for agent in self.agents if agent not in actions]
        if unknown or missing:
            raise ValueError(
                f"step() needs one action for each live agent {self.agents}; "
                f"missing {missing}, not live {unknown}"
            )
        moves = {agent: self._check_action(agent, actions[agent]) for agent in self.agents}
        for agent, move in moves.items():
            self._record(agent, move)
        outcome = self._apply(self._act(moves))
        self._steps += 1
        acted = list(self.agents)
        done = bool(outcome.done)
        truncated = not done and self.max_cycles is not None and self._steps >= self.max_cycles
        observations = {agent: {"text": self._observe(agent)} for agent in acted}
        rewards = {agent: float(outcome.rewards.get(agent, 0.0)) for agent in acted}
        terminations = dict.fromkeys(acted, done)
        truncations = dict.fromkeys(acted, truncated)
        infos = {agent: copy.deepcopy(dict(outcome.infos.get(agent, {}))) for agent in acted}
        if done or truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos
