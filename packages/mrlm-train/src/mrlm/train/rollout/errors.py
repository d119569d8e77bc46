"""Errors about an env: one that failed in its own code, or returned a value of the wrong kind, each
naming the env (and the value it returned)."""

from __future__ import annotations


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
