"""Reading the per-agent entries of an ``EnvState`` reply into Python values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from gymnasium import spaces

from mrlm.envs.remote.convert import value_from_proto
from mrlm.proto.json_codec import decode_json_object
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["AgentStep", "read_agents"]


class AgentStep(NamedTuple):
    """One agent's share of a reset or step, as PettingZoo hands it out."""

    observation: Any
    reward: float
    cumulative_reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


def read_agents(
    state: pb.EnvState, observation_spaces: Mapping[str, spaces.Space[Any]]
) -> dict[str, AgentStep]:
    """Each agent's entry of ``state`` by name, in the server's order, observations typed by their space."""
    return {
        entry.agent: AgentStep(
            value_from_proto(entry.observation, observation_spaces.get(entry.agent)),
            entry.reward,
            entry.cumulative_reward,
            entry.terminated,
            entry.truncated,
            decode_json_object(entry.info_json),
        )
        for entry in state.agents
    }
