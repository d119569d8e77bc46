"""``RemoteVectorEnv``: N sessions of one env on a server (or dealt over several), reset and stepped in one
round trip each."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from mrlm.envs.remote.connection import BatchStream, Connection, connect
from mrlm.envs.remote.convert import value_from_proto, value_to_proto
from mrlm.envs.remote.errors import RemoteDeadlineError, RemoteEnvError, SessionLostError, from_batch_error
from mrlm.envs.remote.servers import ServerList, server_list
from mrlm.envs.remote.session import RemoteSession, options_json, wire_seed
from mrlm.proto.json_codec import decode_json_object
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["RemoteVectorEnv"]


class RemoteVectorEnv(VectorEnv[Any, Any, Any]):
    """A ``gymnasium.vector.VectorEnv`` over ``num_envs`` sessions of a single-agent env on one server.

    Each ``reset`` and ``step`` is one ``Batch`` call (or one message on a ``StepStream`` with
    ``stream=True``) covering every sub-env, which the server runs in parallel. Sub-envs reset
    automatically on the step after they end (``AutoresetMode.NEXT_STEP``, Gymnasium's default): that
    step ignores their action and returns the first observation of the new episode, with reward 0.

    ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (a list gives one seed per sub-env), so the
    sub-envs match local envs reset with the same seeds. Observations of text spaces come as a tuple of
    ``str``; rewards, terminations and truncations as arrays; infos in Gymnasium's vector layout (each
    key with a ``_key`` mask).

    With several servers (``"host1:port1,host2:port2"`` or a
    :class:`~mrlm.envs.remote.servers.ServerList`), the sub-envs are dealt over them in turn, each
    server over one connection, and each ``reset`` and ``step`` sends one batch to every server at once.

    Args:
        address: ``host:port``, ``grpc://host:port``, ``grpcs://host:port``, a shared
            :class:`~mrlm.envs.remote.connection.Connection`, or several servers.
        env_id: the id the server hosts.
        num_envs: how many sessions to open.
        stream: send the batches over one long-lived ``StepStream`` call instead of unary ``Batch`` calls.
        **kwargs: the env's own keyword arguments (JSON-encodable), the same for every sub-env.
    """

    def __init__(
        self,
        address: str | Connection | ServerList,
        env_id: str,
        num_envs: int,
        *,
        stream: bool = False,
        **kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        servers = None if isinstance(address, Connection) else server_list(address)
        if servers is None:
            assert not isinstance(address, ServerList)
            connection, self._owns_connection = connect(address)
            self._connections = [connection]
        else:
            self._connections, self._owns_connection = [], True
        self._sessions: list[RemoteSession] = []
        self._streams: list[BatchStream] = []
        try:
            if servers is not None:
                for server in servers.in_turn()[:num_envs]:
                    self._connections.append(servers.connect(server))
            # Sub-env i lives on server i % (number of servers): its calls always go there.
            self._homes = [index % len(self._connections) for index in range(num_envs)]
            for home in self._homes:
                self._sessions.append(RemoteSession(self._connections[home], env_id, "gymnasium", kwargs))
            if stream:
                self._streams = [connection.open_stream() for connection in self._connections]
        except BaseException:
            self._release()
            raise
        spec = self._sessions[0].spec
        assert spec.observation_space is not None and spec.action_space is not None
        self.num_envs = num_envs
        self.env_id = env_id
        self.single_observation_space = spec.observation_space
        self.single_action_space = spec.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {**spec.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
        self.render_mode = kwargs.get("render_mode")
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)

    @property
    def session_ids(self) -> list[str]:
        """The server session of each sub-env."""
        return [session.session_id for session in self._sessions]

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._check_open()
        seeds = _seeds(seed, self.num_envs)
        if isinstance(seed, int):
            super().reset(seed=seed)
        for session in self._sessions:
            if session.lost:  # a reset starts over anyway: replace sessions the server dropped
                session.reopen()
        encoded = options_json(options)
        items = [self._reset_item(index, seeds[index], encoded) for index in range(self.num_envs)]
        states = self._send(items)
        observations: list[Any] = []
        infos: dict[str, Any] = {}
        for index, state in enumerate(states):
            agent = state.agents[0]
            observations.append(value_from_proto(agent.observation, self.single_observation_space))
            infos = self._add_info(infos, decode_json_object(agent.info_json), index)
        self._autoreset[:] = False
        return self._batched(observations), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open()
        per_env = list(iterate(self.action_space, actions))
        if len(per_env) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(per_env)}")
        items = [
            self._reset_item(index, None, "")
            if self._autoreset[index]
            else pb.BatchItem(
                step=pb.StepRequest(
                    session_id=self._sessions[index].session_id, action=value_to_proto(action)
                )
            )
            for index, action in enumerate(per_env)
        ]
        states = self._send(items, on_failure=self._keep_up_with)
        observations = []
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for index, state in enumerate(states):
            agent = state.agents[0]
            observations.append(value_from_proto(agent.observation, self.single_observation_space))
            if not self._autoreset[index]:
                rewards[index] = agent.reward
                terminations[index] = agent.terminated
                truncations[index] = agent.truncated
            infos = self._add_info(infos, decode_json_object(agent.info_json), index)
        self._autoreset = terminations | truncations
        return self._batched(observations), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Release every session (and the channel, if this env opened it). Never raises."""
        self._release()

    # ----------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        """Raise, once closed, the error a closed ``RemoteEnv`` raises: the channels and streams are
        closed too, and would otherwise report the server as unreachable."""
        for session in self._sessions:
            session.live_id()

    def _reset_item(self, index: int, seed: int | None, options_json: str) -> pb.BatchItem:
        request = pb.ResetRequest(session_id=self._sessions[index].session_id, options_json=options_json)
        if seed is not None:
            request.seed = wire_seed(seed)
        return pb.BatchItem(reset=request)

    def _keep_up_with(self, states: list[pb.EnvState | None]) -> None:
        """After a step that failed for some sub-envs: the server still ran the others (``states``
        holds what they returned, None for the failed ones), so note which of them ended their
        episode, for the next step to reset them rather than step them past their end."""
        for index, state in enumerate(states):
            if state is not None:
                agent = state.agents[0]
                ended = agent.terminated or agent.truncated
                self._autoreset[index] = ended and not self._autoreset[index]  # an autoreset starts one

    def _send(
        self,
        items: list[pb.BatchItem],
        on_failure: Callable[[list[pb.EnvState | None]], None] | None = None,
    ) -> list[pb.EnvState]:
        """One round trip (to every server at once); the first failure raises its :class:`RemoteEnvError`,
        after ``on_failure`` was given the states of the items that succeeded (None for the others)."""
        by_home: dict[int, list[int]] = {}
        for index in range(len(items)):
            by_home.setdefault(self._homes[index], []).append(index)
        waiting = [
            (home, indices, self._start(home, pb.BatchRequest(items=[items[i] for i in indices])))
            for home, indices in by_home.items()
        ]
        states: list[pb.EnvState | None] = [None] * len(items)
        failure: RemoteEnvError | None = None
        for home, indices, reply in waiting:
            try:
                results = reply().results
            except RemoteEnvError as broken:  # every batch is waited for, even after one failed
                failure = failure or broken
                continue
            address = self._connections[home].address
            for index, result in zip(indices, results, strict=True):
                if result.HasField("error"):
                    error = from_batch_error(result.error, address=address, call="Batch")
                    if isinstance(error, (SessionLostError, RemoteDeadlineError)):
                        self._sessions[index].lost = True
                    failure = failure or error
                else:
                    states[index] = result.state
        if failure is not None:
            if on_failure is not None:
                on_failure(states)
            raise failure
        return [state if state is not None else pb.EnvState() for state in states]

    def _start(self, home: int, request: pb.BatchRequest) -> Callable[[], pb.BatchResponse]:
        """Send a batch to server ``home``; the function returned waits for its reply."""
        if self._streams:
            stream = self._streams[home]
            stream.put(request)
            return stream.take
        connection = self._connections[home]
        if len(self._connections) == 1:  # nothing to overlap with: a plain blocking call
            return functools.partial(connection.batch, request)
        return connection.start_batch(request)

    def _batched(self, observations: list[Any]) -> Any:
        empty = create_empty_array(self.single_observation_space, n=self.num_envs)
        return concatenate(self.single_observation_space, observations, empty)  # type: ignore[arg-type]

    def _release(self) -> None:
        for stream in self._streams:
            stream.close()
        for session in self._sessions:
            session.close()
        if self._owns_connection:
            for connection in self._connections:
                connection.close()


def _seeds(seed: int | Sequence[int | None] | None, count: int) -> list[int | None]:
    if seed is None:
        return [None] * count
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + index for index in range(count)]
    seeds = list(seed)
    if len(seeds) != count:
        raise ValueError(f"expected {count} seeds, got {len(seeds)}")
    return seeds
