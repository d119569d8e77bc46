"""``RemoteEnv``: a ``gymnasium.Env`` whose env instance lives on an env server."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium
from gymnasium.envs.registration import EnvSpec

from mrlm.envs.remote.connection import Connection
from mrlm.envs.remote.convert import set_value, value_from_proto
from mrlm.envs.remote.servers import ServerList
from mrlm.envs.remote.session import RemoteSession
from mrlm.proto.json_codec import decode_json_object
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteEnv"]


class RemoteEnv(gymnasium.Env[Any, Any]):
    """A single-agent env served by ``mrlm-envs serve``, driven through the Gymnasium API.

    Opening the client opens a session on the server, which builds its own instance of ``env_id`` with
    ``kwargs``; spaces and metadata come from the server, so the official checker passes through the
    wire and a trainer cannot tell it from the local env::

        env = RemoteEnv("127.0.0.1:50051", "mrlm/Math-v0", level=1)
        observation, info = env.reset(seed=0)
        observation, reward, terminated, truncated, info = env.step("\\\\boxed{4}")
        env.close()

    ``mrlm.envs.make("grpc://127.0.0.1:50051/mrlm/Math-v0", level=1)`` builds the same client.

    Values cross the wire as text or JSON: infos and JSON observations come back with JSON's types
    (tuples become lists). ``render_mode="human"`` prints here what a local text env prints: each
    new transcript entry in ``reset`` and ``step``, and the whole transcript (the server's ``"ansi"``
    text) on ``render()``.
    A call that finds its session gone raises :class:`~mrlm.envs.remote.errors.SessionLostError`; the
    next ``reset()`` then opens a new session. ``close()`` releases the session and never raises.

    Args:
        address: ``host:port``, ``grpc://host:port``, ``grpcs://host:port``, a shared
            :class:`~mrlm.envs.remote.connection.Connection` (for a token, TLS roots, deadlines...), or
            several servers (``"host1:port1,host2:port2"`` or a
            :class:`~mrlm.envs.remote.servers.ServerList`), of which the session takes the next in turn.
        env_id: the id the server hosts, such as ``"mrlm/Math-v0"``.
        **kwargs: the env's own keyword arguments (JSON-encodable), checked by the server.
    """

    def __init__(self, address: str | Connection | ServerList, env_id: str, **kwargs: Any) -> None:
        self.render_mode: str | None = kwargs.get("render_mode")
        self._session = RemoteSession.for_client(address, env_id, "gymnasium", kwargs)
        spec = self._session.spec
        assert spec.observation_space is not None and spec.action_space is not None
        self.observation_space = spec.observation_space
        self.action_space = spec.action_space
        self.metadata = {"render_modes": [], **spec.metadata}
        self.spec = _gymnasium_spec(address, env_id, kwargs)

    @property
    def session_id(self) -> str:
        """The id of the current server session ("" once closed)."""
        return self._session.session_id

    @property
    def connection(self) -> Connection:
        """The channel to the server."""
        return self._session.connection

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)  # the checker looks for a seeded np_random on the client too
        state = self._session.reset(seed, options)
        agent = state.agents[0]
        observation = value_from_proto(agent.observation, self.observation_space)
        self._print_human(("env", observation))
        return observation, decode_json_object(agent.info_json)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        request = pb.StepRequest()
        request.action.SetInParent()  # an action, even None (which the server then refuses)
        set_value(request.action, action)
        state = self._session.step(request)
        agent = state.agents[0]
        observation = value_from_proto(agent.observation, self.observation_space)
        self._print_human(("agent", action), ("env", observation))
        return (
            observation,
            agent.reward,
            agent.terminated,
            agent.truncated,
            decode_json_object(agent.info_json),
        )

    def render(self) -> Any:
        """The server's ``"ansi"`` text; printed (and None returned) in ``"human"`` mode."""
        return self._session.render_as(self.render_mode)

    def _print_human(self, *entries: tuple[str, Any]) -> None:
        """In ``"human"`` mode, print what ``reset`` and ``step`` add to the transcript, as a local
        text env prints it (without a round trip: the entries are the action and observation)."""
        if self.render_mode == "human":
            for speaker, text in entries:
                print(f"[{speaker}]\n{text}")

    def close(self) -> None:
        """Release the server session (and the channel, if this client opened it). Never raises."""
        self._session.close()
        super().close()

    def __repr__(self) -> str:
        return f"RemoteEnv({self._session.connection.address!r}, {self._session.env_id!r})"


def _gymnasium_spec(
    address: str | Connection | ServerList, env_id: str, kwargs: dict[str, Any]
) -> EnvSpec | None:
    """A spec that rebuilds this client, so ``env.spec.make()`` (and the checker's render tests) work."""
    try:
        return EnvSpec(
            id=env_id, entry_point=functools.partial(RemoteEnv, address, env_id), kwargs=dict(kwargs)
        )
    except Exception:  # an id Gymnasium cannot parse: no spec, as for an env built without make()
        return None
