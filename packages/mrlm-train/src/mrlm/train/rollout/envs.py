"""Building the envs a rollout plays, telling their kind, and reading what they return.

An env is given as an id (an ``mrlm.envs`` id, a remote ``grpc://`` id, or a ``gymnasium`` id) or as
a zero-argument factory. Its kind follows from what it is: a ``gymnasium.Env`` (single agent), a
PettingZoo ``AECEnv`` (agents take turns) or ``ParallelEnv`` (live agents act together). The remote
clients of ``mrlm.envs.remote`` are such envs too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import gymnasium
from pettingzoo import AECEnv, ParallelEnv

from mrlm.train.rollout.errors import EnvFailedError, EnvOutputError

EnvKind = Literal["gymnasium", "aec", "parallel"]
EnvFactory = Callable[[], Any]


def env_factory(
    env: str | EnvFactory, env_kwargs: Mapping[str, Any] | None, kind: EnvKind | None
) -> EnvFactory:
    """A zero-argument callable building the env ``env`` names (as ``kind`` when given).

    ``kind`` picks the API of a multi-agent id; None takes the id's default kind (a remote server
    is asked once, when the first env is built).
    """
    if not isinstance(env, str):
        if env_kwargs:
            raise ValueError("env_kwargs go with an env id; a factory takes no arguments")
        return env
    kwargs = dict(env_kwargs or {})
    chosen: list[EnvKind] = []

    def make() -> Any:
        import mrlm.envs

        try:
            entry = mrlm.envs.env_entry(env)
        except mrlm.envs.UnknownEnvError:
            if env not in gymnasium.registry or kind not in (None, "gymnasium"):
                raise
            return gymnasium.make(env, **kwargs)
        if not chosen:
            chosen.append(kind if kind is not None else entry.kinds[0])
        return mrlm.envs.make(env, kind=chosen[0], **kwargs)

    return make


def check_env_id(env: str) -> None:
    """Raise what building ``env`` would raise for an id no env answers to: ``UnknownEnvError`` for
    an id neither MRLM nor gymnasium has registered, the remote errors for a server that is not
    there or does not host it. Called before a model loads, which may take minutes."""
    import mrlm.envs

    try:
        mrlm.envs.env_entry(env)
    except mrlm.envs.UnknownEnvError:
        if env not in gymnasium.registry:
            raise


@contextlib.contextmanager
def started_env(make_env: EnvFactory, label: str, seed: int) -> Iterator[Any]:
    """One env from ``make_env``, reset with ``seed``, closed when the block ends.

    Commands start one such env before any model loads, so that an env that cannot even start
    (arguments it refuses, a reset that raises) fails in one line instead of minutes later in the
    first rollout. ``label`` names the env in the messages.

    Raises:
        UnknownEnvError, EnvArgumentError: as the registry raises them.
        EnvFailedError: anything else the env raised when built or reset, or an object that is no env.
    """
    from mrlm.envs.registry import EnvArgumentError, UnknownEnvError

    try:
        env = make_env()
    except (UnknownEnvError, EnvArgumentError):
        raise
    except Exception as error:
        raise EnvFailedError(f"env {label!r} could not be built: {type(error).__name__}: {error}") from error
    try:
        try:
            _check_reset(kind_of(env), env.reset(seed=seed))
        except Exception as error:
            raise EnvFailedError(
                f"env {label!r} failed at reset(seed={seed}): {type(error).__name__}: {error}"
            ) from error
        yield env
    finally:
        env.close()


def _check_reset(kind: EnvKind, returned: object) -> None:
    """Raise EnvOutputError unless ``returned``, what reset returned, has the shape of ``kind``'s
    API: ``(observation, info)``, ``(observations, infos)`` as dicts, or nothing (AEC). An env of
    the old Gym API returns a bare observation, which would fail only in the first rollout."""
    from mrlm.train.rollout.errors import EnvOutputError

    if kind == "aec":
        return
    names = "(observation, info)" if kind == "gymnasium" else "(observations, infos), both dicts"
    if isinstance(returned, tuple) and len(returned) == 2:
        first, info = returned
        if isinstance(info, Mapping) and (kind == "gymnasium" or isinstance(first, Mapping)):
            return
    if isinstance(returned, tuple):
        shape = "(" + ", ".join(type(part).__name__ for part in returned[:6]) + ")"
    else:
        shape = type(returned).__name__
    raise EnvOutputError(f"reset returned {shape}; it must return {names}")


def kind_of(env: object) -> EnvKind:
    """The API ``env`` offers; TypeError for anything else."""
    if isinstance(env, AECEnv):
        return "aec"
    if isinstance(env, ParallelEnv):
        return "parallel"
    if isinstance(env, gymnasium.Env):
        return "gymnasium"
    raise TypeError(
        f"cannot roll out {type(env).__name__}: expected a gymnasium.Env or a PettingZoo AECEnv or ParallelEnv"
    )


def env_name(env: Any) -> str:
    """The id of ``env`` for records: its gymnasium spec id, else the class name of the bare env."""
    spec = getattr(env, "spec", None)
    if spec is not None and getattr(spec, "id", None):
        return str(spec.id)
    return type(getattr(env, "unwrapped", env)).__name__


def observation_text(value: object, env_id: str) -> str:
    """The text of an observation: a ``str``, or the ``"text"`` of a multi-agent text observation."""
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    if not isinstance(value, str):
        raise EnvOutputError(
            f"the observation of env {env_id!r} must be a str (a text env), got {type(value).__name__}"
        )
    return value


def reward_value(value: object, env_id: str) -> float:
    """``value`` as a float: anything ``float()`` takes but None, strings and bytes.

    Numpy and torch scalars are numbers too. A string is refused although ``float("1")`` works: an
    env returning text as its reward has a bug that should not pass silently.
    """
    if value is not None and not isinstance(value, (str, bytes)):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    raise EnvOutputError(
        f"env {env_id!r} returned the reward {value!r} ({type(value).__name__}) from step(); "
        "rewards must be numbers (int or float)"
    )
