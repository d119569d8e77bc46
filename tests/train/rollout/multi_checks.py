"""Checks of multi-agent rollouts made by replaying the rows' replies with the plain PettingZoo API.

They recompute what the engine should have recorded without using its code: per-agent, per-turn
rewards of ``align`` episodes, and the credits of ``cross`` samples.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mrlm.train.generation import Completion, HFGenerator, SamplingParams
from mrlm.train.rollout import Trajectory


class Recording:
    """Passes generate calls through and keeps every completion."""

    def __init__(self, inner: HFGenerator) -> None:
        self.inner = inner
        self.completions: list[Completion] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        out = self.inner.generate(prompts, params)
        self.completions += out
        return out


def replies(row: Trajectory) -> list[str]:
    return [m["content"] for m in row.messages if m["role"] == "assistant"]


def masked_segments(row: Trajectory) -> list[tuple[int, ...]]:
    """The runs of generated tokens of a row."""
    segments: list[tuple[int, ...]] = []
    for start, end in row.turn_spans:
        if any(row.mask[start:end]):
            assert all(row.mask[start:end]), "a reply is trained whole or not at all"
            segments.append(tuple(row.token_ids[start:end]))
    assert sum(row.mask) == sum(len(s) for s in segments), "the mask covers only replies"
    return segments


def align_rewards(
    make: Callable[[], Any], kind: str, seed: int, moves: Mapping[str, list[str]]
) -> dict[str, list[float]]:
    """Each agent's turn rewards when the agents play ``moves`` (their replies in order) from ``seed``."""
    env = make()
    rewards: dict[str, list[float]] = {agent: [] for agent in moves}
    if kind == "parallel":
        env.reset(seed=seed)
        while env.agents:
            turn = len(rewards[env.agents[0]])
            _, paid, _, _, _ = env.step({agent: moves[agent][turn] for agent in env.agents})
            for agent, value in paid.items():
                rewards[agent].append(float(value))
        return rewards
    env.reset(seed=seed)
    early = dict.fromkeys(moves, 0.0)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        if rewards[agent]:
            rewards[agent][-1] += reward
        else:
            early[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        rewards[agent].append(early[agent])
        early[agent] = 0.0
        env.step(moves[agent][len(rewards[agent]) - 1])
    return rewards


def round_rewards(
    make: Callable[[], Any],
    kind: str,
    seed: int,
    history: Sequence[Mapping[str, str]],
    actions: Mapping[str, str],
) -> dict[str, float]:
    """What each agent is paid during the round ``actions`` played after the rounds of ``history``."""
    env = make()
    env.reset(seed=seed)
    paid = dict.fromkeys(actions, 0.0)
    for number, joint in enumerate([*history, actions]):
        if kind == "parallel":
            _, rewards, _, _, _ = env.step(dict(joint))
            steps = [rewards]
        else:
            steps = []
            for agent in list(joint):  # the built-in AEC envs are round robin in agent order
                assert env.agent_selection == agent
                env.step(joint[agent])
                steps.append(dict(env.rewards))
        if number == len(history):
            for rewards in steps:
                for agent, value in rewards.items():
                    paid[agent] += float(value)
    return paid


def cross_credits(
    make: Callable[[], Any], kind: str, seed: int, groups: Sequence[Sequence[Trajectory]]
) -> list[list[float]]:
    """The credit of each sample of one round, ``groups`` holding each agent's samples in agent order."""
    agents = [str(group[0].agent) for group in groups]
    turn = groups[0][0].num_turns - 1
    history = [{str(g[0].agent): replies(g[0])[t] for g in groups} for t in range(turn)]
    samples = [[replies(row)[-1] for row in group] for group in groups]
    returns: dict[tuple[int, ...], dict[str, float]] = {}
    for combo in itertools.product(*(range(len(s)) for s in samples)):
        actions = {agent: samples[k][j] for k, (agent, j) in enumerate(zip(agents, combo, strict=True))}
        returns[combo] = round_rewards(make, kind, seed, history, actions)
    credits = []
    for k, agent in enumerate(agents):
        credits.append(
            [
                sum(r[agent] for c, r in returns.items() if c[k] == j)
                / len([c for c in returns if c[k] == j])
                for j in range(len(samples[k]))
            ]
        )
    return credits
