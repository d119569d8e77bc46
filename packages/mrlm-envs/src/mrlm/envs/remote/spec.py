"""What a client knows of a session's env: its kind, spaces and metadata, rebuilt from an ``EnvSpec``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gymnasium import spaces

from mrlm.envs.registry import EnvKind
from mrlm.envs.remote.convert import KIND_FROM_PROTO, space_from_proto
from mrlm.proto.json_codec import decode_json_object
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteSpec"]


@dataclass(frozen=True)
class RemoteSpec:
    """The spec of a remote env instance, with spaces built once (the checkers want the same objects).

    Attributes:
        env_id: the id on the server.
        kind: how the session is driven.
        observation_space: Gymnasium envs: the observation space (None for multi-agent envs).
        action_space: Gymnasium envs: the action space (None for multi-agent envs).
        possible_agents: multi-agent envs: the agent names, in order.
        observation_spaces: multi-agent envs: each agent's observation space.
        action_spaces: multi-agent envs: each agent's action space.
        max_num_agents: multi-agent envs: most agents alive at once.
        metadata: the JSON-encodable entries of the env's metadata.
    """

    env_id: str
    kind: EnvKind
    observation_space: spaces.Space[Any] | None = None
    action_space: spaces.Space[Any] | None = None
    possible_agents: list[str] = field(default_factory=list)
    observation_spaces: dict[str, spaces.Space[Any]] = field(default_factory=dict)
    action_spaces: dict[str, spaces.Space[Any]] = field(default_factory=dict)
    max_num_agents: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_proto(cls, message: pb.EnvSpec) -> RemoteSpec:
        """Rebuild the spec; ``ValueError`` for a kind this client does not know."""
        if message.kind not in KIND_FROM_PROTO:
            raise ValueError(f"the server described {message.env_id!r} with an unknown kind {message.kind}")
        agents = list(message.agents)
        return cls(
            env_id=message.env_id,
            kind=KIND_FROM_PROTO[message.kind],
            observation_space=(
                space_from_proto(message.observation_space) if message.HasField("observation_space") else None
            ),
            action_space=space_from_proto(message.action_space) if message.HasField("action_space") else None,
            possible_agents=[agent.agent for agent in agents],
            observation_spaces={agent.agent: space_from_proto(agent.observation_space) for agent in agents},
            action_spaces={agent.agent: space_from_proto(agent.action_space) for agent in agents},
            max_num_agents=message.max_num_agents,
            metadata=decode_json_object(message.metadata_json),
        )
