"""``RemoteParallelEnv``: a PettingZoo ``ParallelEnv`` whose env instance lives on an env server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gymnasium import spaces
from pettingzoo import ParallelEnv

from mrlm.envs.remote.connection import Connection
from mrlm.envs.remote.convert import value_to_proto
from mrlm.envs.remote.servers import ServerList
from mrlm.envs.remote.session import RemoteSession
from mrlm.envs.remote.state import read_agents
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteParallelEnv"]

StepResult = tuple[
    dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
]


class RemoteParallelEnv(ParallelEnv[str, Any, Any]):
    """A multi-agent env served by ``mrlm-envs serve``, driven through PettingZoo's Parallel API.

    ``step`` sends one action per live agent in one call and returns the five per-agent dicts of the
    agents that acted; ``agents`` follows the server (empty once the episode is over).

    Args:
        address: ``host:port``, ``grpc://host:port``, ``grpcs://host:port``, a shared
            :class:`~mrlm.envs.remote.connection.Connection`, or several servers (comma-separated, or a
            :class:`~mrlm.envs.remote.servers.ServerList`), of which the session takes the next.
        env_id: the id the server hosts.
        **kwargs: the env's own keyword arguments (JSON-encodable).
    """

    def __init__(self, address: str | Connection | ServerList, env_id: str, **kwargs: Any) -> None:
        self.render_mode: str | None = kwargs.get("render_mode")
        self._session = RemoteSession.for_client(address, env_id, "parallel", kwargs)
        spec = self._session.spec
        self.metadata = spec.metadata
        self.possible_agents = list(spec.possible_agents)
        self.observation_spaces: dict[str, spaces.Space[Any]] = spec.observation_spaces
        self.action_spaces: dict[str, spaces.Space[Any]] = spec.action_spaces
        self._max_num_agents = spec.max_num_agents or len(self.possible_agents)
        self.agents: list[str] = []

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

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        state = self._session.reset(seed, options)
        agents = read_agents(state, self.observation_spaces)
        self.agents = list(state.live_agents)
        return (
            {name: agent.observation for name, agent in agents.items()},
            {name: agent.info for name, agent in agents.items()},
        )

    def step(self, actions: Mapping[str, Any]) -> StepResult:
        if not isinstance(actions, Mapping):  # as the local envs say it
            raise TypeError(f"step() takes a dict of each live agent's action, got {type(actions).__name__}")
        if not all(isinstance(name, str) for name in actions):
            # The wire names agents by str and would refuse the key with a bare TypeError; no agent
            # has such a name, so this is the local env's refusal, said here before sending.
            unknown = sorted(set(actions) - set(self.agents), key=repr)
            missing = [agent for agent in self.agents if agent not in actions]
            raise ValueError(
                f"step() needs one action for each live agent {self.agents}; "
                f"missing {missing}, not live {unknown}"
            )
        request = pb.StepRequest(
            actions=pb.AgentActions(
                actions={name: value_to_proto(action) for name, action in actions.items()}
            )
        )
        state = self._session.step(request)
        agents = read_agents(state, self.observation_spaces)
        self.agents = list(state.live_agents)
        return (
            {name: agent.observation for name, agent in agents.items()},
            {name: agent.reward for name, agent in agents.items()},
            {name: agent.terminated for name, agent in agents.items()},
            {name: agent.truncated for name, agent in agents.items()},
            {name: agent.info for name, agent in agents.items()},
        )

    def render(self) -> Any:
        """The server's ``"ansi"`` text; printed (and None returned) in ``"human"`` mode."""
        return self._session.render_as(self.render_mode)

    def close(self) -> None:
        """Release the server session (and the channel, if this client opened it). Never raises."""
        self._session.close()

    def __enter__(self) -> RemoteParallelEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __str__(self) -> str:
        return f"RemoteParallelEnv<{self._session.env_id}>"
