"""The ``cross`` joint mode: every combination of the agents' samples from the same state.

For each seed, one episode (the *line*) is played round by round. At each round, every live agent
samples ``G`` replies to what it observes at the start of the round (in AEC envs too: all agents
sample from the round's start, so no sample sees another's). Every joint action, one sample per
agent (``G ** n`` of them for ``n`` agents), is played from that state: the line's env plays the
joint action of samples 0, and each other one is played in a spare env reset with the seed after
replaying the line's earlier rounds (a replay that observes anything else raises
:class:`~mrlm.train.rollout.errors.ReplayMismatchError`). Sample ``j`` of agent ``a`` is credited with
the mean, over the joint actions that contain it, of the reward ``a`` got from the round.

Each sample becomes one row: the agent's conversation up to the round, then the sample. Only the
sample is trained (earlier replies have mask 0 and reward 0: they are rows of earlier rounds) and its
one reward is its credit; its info, ending and final observation are those of the joint action made
of it and the other agents' samples 0. The ``G`` samples of one agent at one round form a group.

The line continues with samples 0 (an ordinary on-policy episode; its rewards are those of that joint
action). It ends as an ``align`` episode does; a round that is not played (a seed whose first prompt
is too long, say) gives no rows. With a single-round env, the main use, this is plain: each agent's ``G`` replies to the task,
each credited with its mean return over all the partners' replies.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from mrlm.train.rollout.context import Episode, Rollout, Task
from mrlm.train.rollout.play_rounds import record_round, start_episodes
from mrlm.train.rollout.replay import check_replay, replay
from mrlm.train.rollout.rounds import Agent, AgentResult, RoundEnv
from mrlm.train.rollout.seat import Seat
from mrlm.train.rollout.trajectory import Trajectory

Combo = tuple[int, ...]
"""A joint action: the index of each agent's sample, in the round's agent order."""


@dataclass
class _Line(Episode):
    """One seed's episode, continued with samples 0, and the rows its rounds produced."""

    history: list[dict[Agent, str]] = field(default_factory=list)
    blocks: list[list[Trajectory]] = field(default_factory=list)


@dataclass
class _Round:
    """One line's round: its agents, their samples, and what every joint action gave."""

    line: _Line
    agents: list[Agent]
    start: dict[Agent, str]
    samples: dict[Agent, list[Seat]]
    actions: dict[Agent, list[str]] = field(default_factory=dict)
    outcomes: dict[Combo, dict[Agent, AgentResult]] = field(default_factory=dict)

    def joint(self, combo: Combo) -> dict[Agent, str]:
        return {agent: self.actions[agent][j] for agent, j in zip(self.agents, combo, strict=True)}


def play_cross(
    rollout: Rollout,
    envs: Sequence[RoundEnv],
    spares: Sequence[RoundEnv],
    tasks: Sequence[Task],
    group_size: int,
    max_joint_actions: int,
) -> list[list[list[Trajectory]]]:
    """Play one line per task (``envs[i]`` reset with ``tasks[i].seed``), replaying joint actions in ``spares``.

    Returns:
        For each task, its groups in round order, then agent order: ``group_size`` rows each, sample
        ``j`` at index ``j`` (group ids are left at -1 for the caller to number).

    Raises:
        ValueError: a round has more than ``max_joint_actions`` joint actions.
    """
    lines = start_episodes(rollout, envs, tasks, _Line)

    turn = 0
    while live := [line for line in lines if not line.done]:
        rounds = [_start(line, group_size, max_joint_actions) for line in live]
        samples = [seat for r in rounds for agent in r.agents for seat in r.samples[agent]]
        completions = iter(rollout.generate(samples, turn))
        for r in rounds:
            r.actions = {agent: [s.reply(next(completions)) for s in r.samples[agent]] for agent in r.agents}
        _evaluate(rollout, rounds, spares, group_size)
        for r in rounds:
            _credit(r, group_size)
            _continue(rollout, r)
        turn += 1
    return [line.blocks for line in lines]


def too_many_joint_actions(group_size: int, num_agents: int, max_joint_actions: int) -> str | None:
    """Why a round of ``num_agents`` agents with ``group_size`` samples each cannot be played in
    ``cross`` mode (its ``group_size ** num_agents`` joint actions are more than
    ``max_joint_actions``), naming the largest group size that can be; None when it can."""
    actions = group_size**num_agents
    if actions <= max_joint_actions:
        return None
    largest = int(max_joint_actions ** (1 / num_agents))
    while (largest + 1) ** num_agents <= max_joint_actions:
        largest += 1
    while largest**num_agents > max_joint_actions:
        largest -= 1
    return (
        f"cross joint mode: {group_size} samples for each of {num_agents} agents make {actions} joint "
        f"actions per round, more than max_joint_actions={max_joint_actions} (group_size at most "
        f"{largest} with {num_agents} agents)"
    )


def _start(line: _Line, group_size: int, max_joint_actions: int) -> _Round:
    agents = list(line.env.agents)
    problem = too_many_joint_actions(group_size, len(agents), max_joint_actions)
    if problem is not None:
        raise ValueError(f"{problem}; lower group_size, raise max_joint_actions or use joint='align'")
    samples = {agent: [line.seats[agent].fork() for _ in range(group_size)] for agent in agents}
    for agent in agents:
        for j, seat in enumerate(samples[agent]):
            seat.sample = j
    return _Round(line, agents, line.env.observations(), samples)


def _evaluate(
    rollout: Rollout, rounds: Sequence[_Round], spares: Sequence[RoundEnv], group_size: int
) -> None:
    """Play every joint action of every round: samples 0 in the line's env, the others in spares."""
    first = rollout.map(lambda r: r.line.env.play(r.joint((0,) * len(r.agents))), list(rounds))
    for r, outcome in zip(rounds, first, strict=True):
        r.outcomes[(0,) * len(r.agents)] = outcome
    others = [
        (r, combo)
        for r in rounds
        for combo in itertools.product(range(group_size), repeat=len(r.agents))
        if any(combo)
    ]
    if not others:
        return
    chunks = [others[i :: len(spares)] for i in range(min(len(spares), len(others)))]
    results = rollout.map(lambda job: _replay_chunk(*job), list(zip(spares, chunks, strict=False)))
    for chunk, outcomes in zip(chunks, results, strict=True):
        for (r, combo), outcome in zip(chunk, outcomes, strict=True):
            r.outcomes[combo] = outcome


def _replay_chunk(env: RoundEnv, chunk: Sequence[tuple[_Round, Combo]]) -> list[dict[Agent, AgentResult]]:
    outcomes = []
    for r, combo in chunk:
        task = r.line.task
        check_replay(r.start, replay(env, task.seed, r.line.history), env.env_id, task.seed)
        outcomes.append(env.play(r.joint(combo)))
    return outcomes


def _credit(r: _Round, group_size: int) -> None:
    """Turn each sample into a row credited with its mean return over the joint actions containing it."""
    env_id = r.line.env_id
    for k, agent in enumerate(r.agents):
        block = []
        for j, seat in enumerate(r.samples[agent]):
            returns = [
                outcome[agent].reward if agent in outcome else 0.0
                for combo, outcome in r.outcomes.items()
                if combo[k] == j
            ]
            own = r.outcomes[tuple(j if i == k else 0 for i in range(len(r.agents)))].get(
                agent, AgentResult()
            )
            row = seat.fork()
            row.turn_rewards[-1] = sum(returns) / len(returns)
            row.infos[-1] = dict(own.info)
            row.end(own.observation, own.terminated, own.truncated)
            block.append(row.trajectory(env_id, -1, last_turn_only=True))
        r.line.blocks.append(block)


def _continue(rollout: Rollout, r: _Round) -> None:
    """Advance the line with samples 0: it keeps their replies and the rewards of their joint action."""
    line = r.line
    for agent in r.agents:
        line.seats[agent] = r.samples[agent][0]
        line.seats[agent].sample = line.task.sample
    combo = (0,) * len(r.agents)
    line.history.append(r.joint(combo))
    record_round(rollout, line, r.outcomes[combo])
