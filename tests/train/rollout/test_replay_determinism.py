"""Resetting a built-in multi-agent env with a seed and replaying the same actions observes the same
things, as the ``cross`` joint mode needs: checked on each env, in both kinds, with the raw API and
with the rollout's replay."""

from __future__ import annotations

from typing import Any

import pytest

import mrlm.envs
from mrlm.train.rollout import replay, round_env

ENVS: dict[str, dict[str, Any]] = {
    "mrlm/Debate-v0": {"rounds": 3},
    "mrlm/CoopCode-v0": {"max_turns": 2},
    "mrlm/ClassCompletion-v0": {"max_turns": 2, "assignment": "agents"},
    "mrlm/Writing-v0": {"rounds": 2},
}
CODE = "```python\ndef {name}(*args):\n    return {value}\n```"


def _action(agent: str, round_: int) -> str:
    """A reply that differs by agent and round: some prose, some code."""
    return f"Round {round_}, {agent} argues point {round_ * 7 + len(agent)}.\n" + CODE.format(
        name=f"helper_{round_}", value=round_
    )


def _transcript(env: Any, kind: str, seed: int) -> list[Any]:
    """Everything the agents observe, and every reward and ending, playing the scripted actions."""
    if kind == "parallel":
        observations, infos = env.reset(seed=seed)
        seen: list[Any] = [observations, sorted(infos)]
        round_ = 0
        while env.agents:
            seen.append(env.step({agent: _action(agent, round_) for agent in env.agents})[:4])
            round_ += 1
        return seen
    env.reset(seed=seed)
    seen = [{agent: env.observe(agent) for agent in env.agents}]
    moves: dict[str, int] = {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seen.append((agent, observation, reward, terminated, truncated))
        if terminated or truncated:
            env.step(None)
            continue
        moves[agent] = moves.get(agent, -1) + 1
        env.step(_action(agent, moves[agent]))
    return seen


@pytest.mark.parametrize("kind", ["aec", "parallel"])
@pytest.mark.parametrize("env_id", list(ENVS))
def test_replaying_from_the_seed_observes_the_same(env_id: str, kind: Any) -> None:
    env = mrlm.envs.make(env_id, kind=kind, **ENVS[env_id])
    fresh = mrlm.envs.make(env_id, kind=kind, **ENVS[env_id])
    for seed in (0, 3):
        first = _transcript(env, kind, seed)
        assert len(first) > 3
        assert _transcript(env, kind, seed) == first  # the same env, reset again
        assert _transcript(fresh, kind, seed) == first  # another env
    other = _transcript(env, kind, 1)
    assert other != first, "another seed should change the episode"


@pytest.mark.parametrize("kind", ["aec", "parallel"])
@pytest.mark.parametrize("env_id", list(ENVS))
def test_the_rollout_replay_reaches_the_same_state(env_id: str, kind: Any) -> None:
    played = round_env(mrlm.envs.make(env_id, kind=kind, **ENVS[env_id]))
    replayed = round_env(mrlm.envs.make(env_id, kind=kind, **ENVS[env_id]))
    played.reset(5)
    history: list[dict[str | None, str]] = []
    while played.agents:
        before = played.observations()
        assert replay(replayed, 5, history) == before
        actions = {agent: _action(str(agent), len(history)) for agent in played.agents}
        outcome = played.play(actions)
        assert replayed.play(actions) == outcome
        history.append(actions)
    assert len(history) >= 2
