"""``RemoteAECEnv``: a PettingZoo ``AECEnv`` whose env instance lives on an env server."""

from __future__ import annotations

import copy
from typing import Any

from gymnasium import spaces
from pettingzoo import AECEnv

from mrlm.envs.remote.connection import Connection
from mrlm.envs.remote.convert import value_to_proto
from mrlm.envs.remote.servers import ServerList
from mrlm.envs.remote.session import RemoteSession
from mrlm.envs.remote.state import read_agents
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteAECEnv"]


class RemoteAECEnv(AECEnv[str, Any, Any]):
    """A multi-agent env served by ``mrlm-envs serve``, driven through PettingZoo's AEC API.

    The server steps its env; after every call the client holds what the AEC API exposes: ``agents``,
    ``agent_selection``, ``rewards``, ``_cumulative_rewards`` (what ``last()`` returns),
    ``terminations``, ``truncations``, ``infos`` and every live agent's observation (``observe``).
    Spaces come from the server and are built once, as the checkers require. An agent that is
    terminated or truncated is stepped with ``None``, as with a local AEC env.

    Args:
        address: ``host:port``, ``grpc://host:port``, ``grpcs://host:port``, a shared
            :class:`~mrlm.envs.remote.connection.Connection`, or several servers (comma-separated, or a
            :class:`~mrlm.envs.remote.servers.ServerList`), of which the session takes the next.
        env_id: the id the server hosts.
        **kwargs: the env's own keyword arguments (JSON-encodable).
    """

    def __init__(self, address: str | Connection | ServerList, env_id: str, **kwargs: Any) -> None:
        super().__init__()
        self.render_mode: str | None = kwargs.get("render_mode")
        self._session = RemoteSession.for_client(address, env_id, "aec", kwargs)
        spec = self._session.spec
        self.metadata = spec.metadata
        self.possible_agents = list(spec.possible_agents)
        self.observation_spaces: dict[str, spaces.Space[Any]] = spec.observation_spaces
        self.action_spaces: dict[str, spaces.Space[Any]] = spec.action_spaces
        self._max_num_agents = spec.max_num_agents or len(self.possible_agents)
        self.agents: list[str] = []
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection = self.possible_agents[0] if self.possible_agents else ""
        self._observations: dict[str, Any] = {}

    @property
    def max_num_agents(self) -> int:
        return self._max_num_agents

    @property
    def session_id(self) -> str:
        """The id of the current server session ("" once closed)."""
        return self._session.session_id

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._apply(self._session.reset(seed, options))

    def step(self, action: Any) -> None:
        request = pb.StepRequest() if action is None else pb.StepRequest(action=value_to_proto(action))
        self._apply(self._session.step(request))

    def observe(self, agent: str) -> Any:
        """The agent's observation after the last call (a copy: callers may modify it)."""
        if agent not in self.possible_agents:  # as the local envs say it
            raise KeyError(f"no agent {agent!r} in this env; its agents are {self.possible_agents}")
        return copy.deepcopy(self._observations.get(agent))

    def render(self) -> Any:
        """The server's ``"ansi"`` text; printed (and None returned) in ``"human"`` mode."""
        return self._session.render_as(self.render_mode)

    def close(self) -> None:
        """Release the server session (and the channel, if this client opened it). Never raises."""
        self._session.close()

    def __enter__(self) -> RemoteAECEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return f"RemoteAECEnv<{self._session.env_id}>"

    def _apply(self, state: pb.EnvState) -> None:
        """Mirror the server env's bookkeeping after a reset or a step."""
        agents = read_agents(state, self.observation_spaces)
        self.agents = list(state.live_agents)
        self.agent_selection = state.agent_selection
        self.rewards = {name: agent.reward for name, agent in agents.items()}
        self._cumulative_rewards = {name: agent.cumulative_reward for name, agent in agents.items()}
        self.terminations = {name: agent.terminated for name, agent in agents.items()}
        self.truncations = {name: agent.truncated for name, agent in agents.items()}
        self.infos = {name: agent.info for name, agent in agents.items()}
        for name, agent in agents.items():
            self._observations[name] = agent.observation
