"""Errors about an env: one that failed in its own code, or returned a value of the wrong kind, each
naming the env (and the value it returned)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence

#: The modules whose frames call an env's own methods (reset, step, observe, last): an exception
#: raised in a frame below one of them came from the env's code, not from the model or the engine.
ENV_CALLERS = frozenset(
    {"mrlm.train.rollout.rounds", "mrlm.train.rollout.play_aec", "mrlm.train.rollout.replay"}
)


class EnvFailedError(RuntimeError):
    """An env raised while it was built, reset or stepped; the message names the env and the seeds."""


class EnvOutputError(TypeError):
    """An env's ``reset`` or ``step`` returned a value of the wrong type (text envs answer a str,
    rewards are numbers)."""


class RewardOverflowError(OverflowError):
    """A finite reward too large for float32, the precision rewards are trained in."""


class ReplayMismatchError(RuntimeError):
    """Resetting an env with a seed and replaying the same actions reached another state: the env is
    not deterministic given its seed, which the ``cross`` joint mode needs."""


def raised_by_env(error: BaseException) -> bool:
    """True when the innermost frame of the trainer's code is one calling the env, and the exception
    came from below it: the env's own code (or a library it called) raised, not the model or the engine.

    False for a remote env's client errors (:class:`mrlm.envs.remote.RemoteEnvError`: the server
    unreachable, a session lost, ...), which name the server and say what happened themselves. Their
    module is looked up, not imported: it loads grpc, and such an error only comes from a run that did.
    """
    remote = sys.modules.get("mrlm.envs.remote.errors")
    if remote is not None and isinstance(error, remote.RemoteEnvError):
        return False
    modules = [frame.f_globals.get("__name__", "") for frame, _ in traceback.walk_tb(error.__traceback__)]
    ours = [i for i, name in enumerate(modules) if name.startswith("mrlm.train.")]
    return bool(ours) and ours[-1] < len(modules) - 1 and modules[ours[-1]] in ENV_CALLERS


def describe_seeds(seeds: Sequence[int]) -> str:
    """``START..END`` for two or more consecutive seeds (both included), else the seeds with commas."""
    if not seeds:
        return "none"
    if len(seeds) > 1 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(seed) for seed in seeds)
