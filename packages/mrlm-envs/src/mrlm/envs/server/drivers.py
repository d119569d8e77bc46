"""Driving one env instance: decode a request, check it, call the env, encode the state that follows.

One driver per API (:class:`GymnasiumDriver`, :class:`AECDriver`, :class:`ParallelDriver`), with the
same methods. Drivers know nothing of sessions or threads; they raise
:class:`~mrlm.envs.server.errors.RequestError` for requests the env must not see:

- FAILED_PRECONDITION: a step before the first reset or after the episode ended;
- INVALID_ARGUMENT: an action of the wrong form for the kind (``actions`` for a Gymnasium or AEC
  session, ``action`` for a parallel one, an action for an agent that is done), malformed or too
  deeply nested JSON, an action over the size limit or outside its action space, a parallel step that does not give exactly
  one action per live agent;
- INTERNAL: an env whose observation or info cannot be encoded.

Exceptions the env itself raises pass through: the servicer reports them as INTERNAL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import grpc
from gymnasium import spaces

from mrlm.envs.registry import EnvKind
from mrlm.envs.remote.convert import KIND_TO_PROTO, set_value, space_to_proto, value_from_proto
from mrlm.envs.server.errors import RequestError
from mrlm.envs.server.payload import depth_error
from mrlm.proto.json_codec import encode_json
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["AECDriver", "Driver", "GymnasiumDriver", "ParallelDriver", "make_driver"]


class Driver(Protocol):
    """What the servicer needs of an env instance, whatever its API."""

    kind: EnvKind
    env: Any

    def spec(self, env_id: str) -> pb.EnvSpec:
        """The spec of the instance."""
        ...

    def reset(self, seed: int | None, options: dict[str, Any]) -> pb.EnvState:
        """Start an episode."""
        ...

    def step(self, request: pb.StepRequest) -> pb.EnvState:
        """Apply the request's action(s)."""
        ...

    def render(self) -> str:
        """The env's text rendering ("" for none)."""
        ...

    def close(self) -> None:
        """Close the env."""
        ...


def make_driver(kind: EnvKind, env: Any, *, max_action_chars: int) -> Driver:
    """The driver of ``env`` for ``kind``."""
    if kind == "gymnasium":
        return GymnasiumDriver(env, max_action_chars=max_action_chars)
    if kind == "aec":
        return AECDriver(env, max_action_chars=max_action_chars)
    return ParallelDriver(env, max_action_chars=max_action_chars)


class GymnasiumDriver:
    """A ``gymnasium.Env``: one agent, named ``""`` on the wire."""

    kind: EnvKind = "gymnasium"

    def __init__(self, env: Any, *, max_action_chars: int) -> None:
        self.env = env
        self._max_action_chars = max_action_chars
        self._started = False
        self._over = False

    def spec(self, env_id: str) -> pb.EnvSpec:
        return pb.EnvSpec(
            env_id=env_id,
            kind=KIND_TO_PROTO[self.kind],
            observation_space=space_to_proto(self.env.observation_space),
            action_space=space_to_proto(self.env.action_space),
            metadata_json=metadata_json(self.env.metadata),
        )

    def reset(self, seed: int | None, options: dict[str, Any]) -> pb.EnvState:
        observation, info = self.env.reset(seed=seed, options=options or None)
        self._started, self._over = True, False
        state = pb.EnvState()
        add_agent(state, "", observation, 0.0, 0.0, False, False, info)
        return state

    def step(self, request: pb.StepRequest) -> pb.EnvState:
        _require_episode(self._started, not self._over)
        if request.WhichOneof("act") != "action":
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "a Gymnasium session steps with one action (StepRequest.action), not per-agent actions",
            )
        action = decode_action(request.action, self.env.action_space, "", self._max_action_chars)
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._over = bool(terminated) or bool(truncated)
        state = pb.EnvState()
        add_agent(state, "", observation, reward, reward, terminated, truncated, info)
        return state

    def render(self) -> str:
        return render_text(self.env.render())

    def close(self) -> None:
        self.env.close()


class AECDriver:
    """A PettingZoo ``AECEnv``: the agent in ``agent_selection`` acts; finished agents step with None."""

    kind: EnvKind = "aec"

    def __init__(self, env: Any, *, max_action_chars: int) -> None:
        self.env = env
        self._max_action_chars = max_action_chars
        self._started = False

    def spec(self, env_id: str) -> pb.EnvSpec:
        return multi_agent_spec(self.env, env_id, self.kind)

    def reset(self, seed: int | None, options: dict[str, Any]) -> pb.EnvState:
        self.env.reset(seed=seed, options=options or None)
        self._started = True
        return self._state()

    def step(self, request: pb.StepRequest) -> pb.EnvState:
        env = self.env
        _require_episode(self._started, bool(env.agents))
        agent = env.agent_selection
        which = request.WhichOneof("act")
        if which == "actions":
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "an AEC session steps one agent at a time (StepRequest.action), not per-agent actions",
            )
        done = bool(env.terminations.get(agent)) or bool(env.truncations.get(agent))
        given = which == "action" and request.action.WhichOneof("kind") is not None
        if done:
            if given:
                raise RequestError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"agent {agent!r} is terminated or truncated: step it with no action (None)",
                )
            action = None
        else:
            if not given:
                raise RequestError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"it is the turn of agent {agent!r}, which needs an action",
                )
            action = decode_action(request.action, env.action_space(agent), agent, self._max_action_chars)
        env.step(action)
        return self._state()

    def render(self) -> str:
        return render_text(self.env.render())

    def close(self) -> None:
        self.env.close()

    def _state(self) -> pb.EnvState:
        env = self.env
        agents = list(env.agents)
        # last() hands out the accumulated rewards; PettingZoo keeps them in this attribute.
        cumulative = getattr(env, "_cumulative_rewards", env.rewards)
        state = pb.EnvState(live_agents=agents, agent_selection=env.agent_selection or "")
        for agent in agents:
            add_agent(
                state,
                agent,
                env.observe(agent),
                env.rewards.get(agent, 0.0),
                cumulative.get(agent, 0.0),
                env.terminations.get(agent, False),
                env.truncations.get(agent, False),
                env.infos.get(agent, {}),
            )
        return state


class ParallelDriver:
    """A PettingZoo ``ParallelEnv``: every live agent acts at each step."""

    kind: EnvKind = "parallel"

    def __init__(self, env: Any, *, max_action_chars: int) -> None:
        self.env = env
        self._max_action_chars = max_action_chars
        self._started = False

    def spec(self, env_id: str) -> pb.EnvSpec:
        return multi_agent_spec(self.env, env_id, self.kind)

    def reset(self, seed: int | None, options: dict[str, Any]) -> pb.EnvState:
        observations, infos = self.env.reset(seed=seed, options=options or None)
        self._started = True
        state = pb.EnvState(live_agents=list(self.env.agents))
        for agent, observation in observations.items():
            add_agent(state, agent, observation, 0.0, 0.0, False, False, infos.get(agent, {}))
        return state

    def step(self, request: pb.StepRequest) -> pb.EnvState:
        env = self.env
        _require_episode(self._started, bool(env.agents))
        if request.WhichOneof("act") != "actions":
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "a parallel session steps every live agent at once (StepRequest.actions), not one action",
            )
        given = request.actions.actions
        live = list(env.agents)
        missing = [agent for agent in live if agent not in given]
        unknown = sorted(set(given) - set(live))
        if missing or unknown:
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"a step needs one action per live agent {live}: missing {missing}, not live {unknown}",
            )
        actions = {
            agent: decode_action(given[agent], env.action_space(agent), agent, self._max_action_chars)
            for agent in live
        }
        observations, rewards, terminations, truncations, infos = env.step(actions)
        state = pb.EnvState(live_agents=list(env.agents))
        for agent, observation in observations.items():
            reward = rewards.get(agent, 0.0)
            add_agent(
                state,
                agent,
                observation,
                reward,
                reward,
                terminations.get(agent, False),
                truncations.get(agent, False),
                infos.get(agent, {}),
            )
        return state

    def render(self) -> str:
        return render_text(self.env.render())

    def close(self) -> None:
        self.env.close()


# Helpers ------------------------------------------------------------------------------------------


def decode_action(value: pb.Value, space: spaces.Space[Any], agent: str, max_chars: int) -> Any:
    """The action ``value`` holds, checked against the size limit and ``space``."""
    who = f" of agent {agent!r}" if agent else ""
    size = len(value.text) if value.WhichOneof("kind") == "text" else len(value.json)
    if size > max_chars:
        raise RequestError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the action{who} has {size} characters, over the server's limit of {max_chars} (--max-action-chars)",
        )
    try:
        action = value_from_proto(value, space)
    except ValueError as error:
        raise RequestError(
            grpc.StatusCode.INVALID_ARGUMENT, f"the action{who} is malformed: {error}"
        ) from None
    except RecursionError:  # JSON nested thousands deep: the decoder gives up
        raise depth_error(f"the action{who}") from None
    try:
        inside = bool(space.contains(action))
    except Exception:  # a value of a shape the space's own check cannot handle
        inside = False
    if not inside:
        raise RequestError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the action{who} ({_preview(action)}) is not in the action space {space}",
        )
    return action


def add_agent(
    state: pb.EnvState,
    agent: str,
    observation: Any,
    reward: Any,
    cumulative_reward: Any,
    terminated: Any,
    truncated: Any,
    info: Mapping[str, Any],
) -> None:
    """Append one agent's share of a reset or step to ``state``.

    Filled in place: building an ``AgentState`` apart and adding it would copy it.
    """
    entry = state.agents.add()
    try:
        set_value(entry.observation, observation)
        entry.agent = agent
        entry.reward = float(reward)
        entry.cumulative_reward = float(cumulative_reward)
        entry.terminated = bool(terminated)
        entry.truncated = bool(truncated)
        if info:
            entry.info_json = encode_json(dict(info))
    except (TypeError, ValueError) as error:
        who = f" of agent {agent!r}" if agent else ""
        raise RequestError(
            grpc.StatusCode.INTERNAL, f"the env's observation or info{who} cannot be sent: {error}"
        ) from None


def multi_agent_spec(env: Any, env_id: str, kind: EnvKind) -> pb.EnvSpec:
    """The spec of a PettingZoo env: each possible agent's spaces."""
    agents = [
        pb.AgentSpec(
            agent=agent,
            observation_space=space_to_proto(env.observation_space(agent)),
            action_space=space_to_proto(env.action_space(agent)),
        )
        for agent in env.possible_agents
    ]
    try:
        max_num_agents = int(env.max_num_agents)
    except (AttributeError, TypeError):
        max_num_agents = len(env.possible_agents)
    return pb.EnvSpec(
        env_id=env_id,
        kind=KIND_TO_PROTO[kind],
        agents=agents,
        max_num_agents=max_num_agents,
        metadata_json=metadata_json(env.metadata),
    )


def metadata_json(metadata: Mapping[str, Any] | None) -> str:
    """The JSON-encodable entries of an env's metadata, as a JSON object."""
    kept: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        try:
            encode_json(value)
        except ValueError:
            continue  # e.g. a function or a class: meaningless to a client elsewhere
        kept[str(key)] = value
    return encode_json(kept)


def render_text(frame: Any) -> str:
    """The text of a render result; refuses frames that are not text (rgb arrays...)."""
    if frame is None:
        return ""
    if isinstance(frame, str):
        return frame
    raise RequestError(
        grpc.StatusCode.FAILED_PRECONDITION,
        f"the env renders {type(frame).__name__}, not text; open it with render_mode='ansi'",
    )


def _require_episode(started: bool, live: bool) -> None:
    if not started:
        raise RequestError(
            grpc.StatusCode.FAILED_PRECONDITION, "step before the first reset: call reset first"
        )
    if not live:
        raise RequestError(grpc.StatusCode.FAILED_PRECONDITION, "the episode is over: call reset first")


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
