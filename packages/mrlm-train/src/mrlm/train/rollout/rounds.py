"""Every kind of env seen round by round: in a round, each live agent acts once.

:class:`RoundEnv` is the common view. :class:`GymRounds` wraps a Gymnasium env (one agent, ``None``;
a round is a step), :class:`ParallelRounds` a PettingZoo ``ParallelEnv`` (a round is a step) and
:class:`AECRounds` a PettingZoo ``AECEnv`` (a round is a run of steps in ``agent_iter`` order that
ends before an agent would act a second time, or with the episode). Agents that are done are
stepped with ``None`` as the AEC API requires, after their final reward and info are read.

What an agent gets from a round (:class:`AgentResult`): the rewards paid to it during the round, its
info (for AEC envs, the info after its own move updated by the later ones of the round), whether it
is done, and what it observes next. The joint actions of earlier rounds replayed from the same seed
reach the same state: that is how the ``cross`` joint mode evaluates joint actions (see
:mod:`mrlm.train.rollout.replay`).
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrlm.train.rollout.envs import env_name, kind_of, observation_text, reward_value
from mrlm.train.rollout.errors import EnvOutputError

Agent = str | None
"""An agent's name; None is the one agent of a Gymnasium env."""


@dataclass
class AgentResult:
    """What one agent got from one round."""

    reward: float = 0.0
    """The rewards paid to the agent during the round."""
    info: dict[str, Any] = field(default_factory=dict)
    """The agent's info at the end of the round."""
    terminated: bool = False
    truncated: bool = False
    observation: str | None = None
    """What the agent observes next (its final observation when it is done)."""


class RoundEnv(abc.ABC):
    """An env played round by round.

    Args:
        env: the env.
        env_id: its id in error messages and records.
    """

    def __init__(self, env: Any, env_id: str) -> None:
        self.env = env
        self.env_id = env_id

    @abc.abstractmethod
    def reset(self, seed: int) -> tuple[dict[Agent, str], dict[Agent, dict[str, Any]]]:
        """Start an episode: the observation and reset info of every agent."""

    @property
    @abc.abstractmethod
    def agents(self) -> list[Agent]:
        """The agents that act in the next round, in acting order (empty once the episode is over)."""

    @abc.abstractmethod
    def observations(self) -> dict[Agent, str]:
        """What each agent of :attr:`agents` observes now."""

    @abc.abstractmethod
    def play(self, actions: Mapping[Agent, str]) -> dict[Agent, AgentResult]:
        """Play one round with one action per agent of :attr:`agents`; the result of each agent that acted."""

    def text(self, value: object) -> str:
        return observation_text(value, self.env_id)

    def reward(self, value: object) -> float:
        return reward_value(value, self.env_id)

    def parts(self, value: object, call: str, names: tuple[str, ...]) -> tuple[Any, ...]:
        """``value``, what ``call`` returned, as the tuple of ``names`` the API defines, or
        :class:`EnvOutputError` naming the env and the shape it must have (an env of the old Gym
        API returns a bare observation from reset and four values from step)."""
        if not isinstance(value, tuple) or len(value) != len(names):
            shape = f"a tuple of {len(value)}" if isinstance(value, tuple) else type(value).__name__
            raise EnvOutputError(
                f"env {self.env_id!r}: {call} returned {shape}; it must return ({', '.join(names)})"
            )
        return value

    def mapping(self, value: object, what: str) -> Mapping[Any, Any]:
        """``value`` when it is a mapping (an info, or one value per agent), else EnvOutputError."""
        if not isinstance(value, Mapping):
            raise EnvOutputError(f"env {self.env_id!r}: {what} is a {type(value).__name__}, not a dict")
        return value

    def flag(self, value: object, what: str) -> bool:
        """``value`` as a bool when it is one (numpy's, or an int 0 or 1, too), else EnvOutputError:
        "yes" is true to bool(), and would end an episode the env did not end."""
        if isinstance(value, bool | np.bool_) or (isinstance(value, int | np.integer) and value in (0, 1)):
            return bool(value)
        raise EnvOutputError(f"env {self.env_id!r}: {what} is {value!r:.40}, not a bool")


class GymRounds(RoundEnv):
    """A Gymnasium env: the agent ``None``, one step per round."""

    def __init__(self, env: Any, env_id: str) -> None:
        super().__init__(env, env_id)
        self._live = False
        self._observation = ""

    def reset(self, seed: int) -> tuple[dict[Agent, str], dict[Agent, dict[str, Any]]]:
        observation, info = self.parts(self.env.reset(seed=seed), "reset", ("observation", "info"))
        self._observation, self._live = self.text(observation), True
        return {None: self._observation}, {None: dict(self.mapping(info, "the info of reset"))}

    @property
    def agents(self) -> list[Agent]:
        return [None] if self._live else []

    def observations(self) -> dict[Agent, str]:
        return {None: self._observation}

    def play(self, actions: Mapping[Agent, str]) -> dict[Agent, AgentResult]:
        names = ("observation", "reward", "terminated", "truncated", "info")
        observation, reward, terminated, truncated, info = self.parts(
            self.env.step(actions[None]), "step", names
        )
        text = self.text(observation)
        value = self.reward(reward)
        terminated, truncated = self.flag(terminated, "terminated"), self.flag(truncated, "truncated")
        info = dict(self.mapping(info, "the info of step"))
        self._observation, self._live = text, not (terminated or truncated)
        return {None: AgentResult(value, info, terminated, truncated, text)}


class ParallelRounds(RoundEnv):
    """A PettingZoo ``ParallelEnv``: every live agent acts in each step."""

    def __init__(self, env: Any, env_id: str) -> None:
        super().__init__(env, env_id)
        self._observations: dict[Agent, str] = {}

    def reset(self, seed: int) -> tuple[dict[Agent, str], dict[Agent, dict[str, Any]]]:
        observations, infos = self.parts(self.env.reset(seed=seed), "reset", ("observations", "infos"))
        observations = self.mapping(observations, "the observations of reset")
        infos = self.mapping(infos, "the infos of reset")
        self._observations = {agent: self.text(value) for agent, value in observations.items()}
        return dict(self._observations), {agent: dict(infos.get(agent, {})) for agent in self.agents}

    @property
    def agents(self) -> list[Agent]:
        return list(self.env.agents)

    def observations(self) -> dict[Agent, str]:
        return {agent: self._observations[agent] for agent in self.agents}

    def play(self, actions: Mapping[Agent, str]) -> dict[Agent, AgentResult]:
        names = ("observations", "rewards", "terminations", "truncations", "infos")
        returned = self.parts(self.env.step(dict(actions)), "step", names)
        observations, rewards, terminations, truncations, infos = (
            self.mapping(value, f"the {name} of step") for value, name in zip(returned, names, strict=True)
        )
        for agent, value in observations.items():
            self._observations[agent] = self.text(value)
        return {
            agent: AgentResult(
                reward=self.reward(rewards.get(agent, 0.0)),
                info=dict(self.mapping(infos.get(agent, {}), f"the info of {agent!r}")),
                terminated=self.flag(terminations.get(agent, False), f"the termination of {agent!r}"),
                truncated=self.flag(truncations.get(agent, False), f"the truncation of {agent!r}"),
                observation=self._observations.get(agent),
            )
            for agent in actions
        }


class AECRounds(RoundEnv):
    """A PettingZoo ``AECEnv``: the live agents act one after the other, once each per round."""

    def reset(self, seed: int) -> tuple[dict[Agent, str], dict[Agent, dict[str, Any]]]:
        self.env.reset(seed=seed)
        infos = {agent: copy.deepcopy(dict(self.env.infos.get(agent, {}))) for agent in self.env.agents}
        return self.observations(), infos

    @property
    def agents(self) -> list[Agent]:
        env = self.env
        return [a for a in env.agents if not (env.terminations.get(a) or env.truncations.get(a))]

    def observations(self) -> dict[Agent, str]:
        return {agent: self.text(self.env.observe(agent)) for agent in self.agents}

    def play(self, actions: Mapping[Agent, str]) -> dict[Agent, AgentResult]:
        env = self.env
        results: dict[Agent, AgentResult] = {}
        acted: set[Agent] = set()
        while env.agents:
            agent = env.agent_selection
            if env.terminations.get(agent) or env.truncations.get(agent):
                # Dead agents are stepped with None; last() gives their final observation and info.
                observation, _, terminated, truncated, info = env.last()
                result = results.setdefault(agent, AgentResult())
                result.info.update(copy.deepcopy(dict(info)))
                result.terminated, result.truncated = bool(terminated), bool(truncated)
                result.observation = self.text(observation)
                env.step(None)
                continue
            if agent in acted or agent not in actions:
                break
            env.step(actions[agent])
            acted.add(agent)
            for other, reward in env.rewards.items():
                if other in actions:
                    results.setdefault(other, AgentResult()).reward += self.reward(reward)
            results.setdefault(agent, AgentResult()).info.update(
                copy.deepcopy(dict(env.infos.get(agent, {})))
            )
        for agent, result in results.items():
            if result.observation is None and agent in env.agents:  # still live: its info and view now
                result.info.update(copy.deepcopy(dict(env.infos.get(agent, {}))))
                result.observation = self.text(env.observe(agent))
        return results


def round_env(env: Any, env_id: str | None = None) -> RoundEnv:
    """The round view of ``env``, whatever its kind."""
    name = env_id if env_id is not None else env_name(env)
    kind = kind_of(env)
    if kind == "aec":
        return AECRounds(env, name)
    if kind == "parallel":
        return ParallelRounds(env, name)
    return GymRounds(env, name)
