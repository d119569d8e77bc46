"""Reaching an episode's state again: reset with its seed and replay the joint actions of its rounds.

The ``cross`` joint mode evaluates each joint action of a round in an env brought to the round's
start this way. That needs envs that are deterministic given their seed; :func:`check_replay` refuses
a replay that observes anything else than the original episode did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mrlm.train.rollout.errors import ReplayMismatchError
from mrlm.train.rollout.rounds import Agent, RoundEnv


def replay(env: RoundEnv, seed: int, history: Sequence[Mapping[Agent, str]]) -> dict[Agent, str]:
    """Reset ``env`` with ``seed``, play the rounds of ``history``; return what the agents observe then."""
    env.reset(seed)
    for actions in history:
        env.play(actions)
    return env.observations()


def check_replay(
    expected: Mapping[Agent, str], replayed: Mapping[Agent, str], env_id: str, seed: int
) -> None:
    """Raise :class:`ReplayMismatchError` unless ``replayed`` observations equal ``expected``."""
    if dict(replayed) == dict(expected):
        return
    differing = sorted(
        str(agent) for agent in set(expected) | set(replayed) if expected.get(agent) != replayed.get(agent)
    )
    raise ReplayMismatchError(
        f"env {env_id!r} reset with seed {seed} and replayed observes differently for {differing}: the cross "
        "joint mode needs an env whose episodes are determined by the seed and the actions"
    )
