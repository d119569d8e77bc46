"""Playing PettingZoo AEC envs in the ``align`` joint mode: agents take turns in ``agent_iter`` order.

Each episode runs until the agent it selects needs a reply; the replies of every waiting episode are
generated together (one generate call per policy), then each env steps with its reply. An agent sees
its observation at the moment it is selected, so it reads the moves made since its last one.

Rewards follow PettingZoo's AEC convention: ``last()`` gives an agent, when it is next selected (or
stepped dead at the end), the rewards accumulated since its previous move, and they are credited to
that move; rewards paid before an agent's first move go to its first reply. A reply's info is the
agent's info right after its move, updated by the info ``last()`` gives at its next selection (so the
final verdict of an env lands on each agent's last reply).

When the rollout stops an episode (``max_turns`` or ``max_prompt_tokens``), the rewards the other
agents accumulated since their last move (``_cumulative_rewards``) are credited as well.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mrlm.train.rollout.context import Episode, Rollout, Task
from mrlm.train.rollout.envs import env_name, observation_text, reward_value
from mrlm.train.rollout.rounds import Agent
from mrlm.train.rollout.seat import Seat
from mrlm.train.rollout.trajectory import Truncation


@dataclass
class _Turns(Episode):
    """An AEC episode: the agent awaiting a reply, and what each agent observed at reset."""

    waiting: Agent = None
    first_observations: dict[Agent, str] = field(default_factory=dict)


def play_aec(
    rollout: Rollout, envs: Sequence[Any], tasks: Sequence[Task], env_id: str | None
) -> list[Episode]:
    """Play one episode per task, ``envs[i]`` reset with ``tasks[i].seed``; return the finished episodes."""
    rollout.map(lambda job: job[0].reset(seed=job[1].seed), list(zip(envs, tasks, strict=True)))
    episodes: list[_Turns] = []
    for env, task in zip(envs, tasks, strict=True):
        episode = _Turns(env, task, env_id if env_id is not None else env_name(env))
        episode.first_observations = {a: observation_text(env.observe(a), episode.env_id) for a in env.agents}
        for agent in env.agents:
            info = copy.deepcopy(dict(env.infos.get(agent, {})))
            episode.seats[agent] = rollout.seat(agent, task, info)
        _advance(rollout, episode)
        episodes.append(episode)

    turn = 0
    while waiting := [e for e in episodes if not e.done]:
        seats = [e.seats[e.waiting] for e in waiting]
        completions = rollout.generate(seats, turn)
        replies = [seat.reply(completion) for seat, completion in zip(seats, completions, strict=True)]
        rollout.map(lambda job: job[0].env.step(job[1]), list(zip(waiting, replies, strict=True)))
        for episode, seat in zip(waiting, seats, strict=True):
            seat.credit(0.0, episode.env.infos.get(seat.agent))  # the reward comes with last(), later
            _advance(rollout, episode)
        turn += 1
    for episode in episodes:
        for agent, seat in episode.seats.items():
            if not seat.opened:  # never selected: it keeps the prompt it would have had
                rollout.open(seat, episode.first_observations[agent])
    return list(episodes)


def _advance(rollout: Rollout, episode: _Turns) -> None:
    """Step dead agents and credit rewards until an agent needs a reply (``episode.waiting``) or the end."""
    env = episode.env
    while env.agents:
        agent = env.agent_selection
        observation, reward, terminated, truncated, info = env.last()
        text = observation_text(observation, episode.env_id)
        seat = episode.seats.get(agent)
        if seat is None:  # an agent that joined during the episode
            seat = episode.seats[agent] = rollout.seat(agent, episode.task, dict(info))
        seat.credit(reward_value(reward, episode.env_id), info)
        if terminated or truncated:
            seat.end(text, terminated, truncated)
            env.step(None)
            continue
        if seat.num_turns >= rollout.max_turns:
            _stop(episode, "max_turns", seat, text)
            return
        fits = rollout.open(seat, text) if not seat.opened else seat.ask(text, rollout.max_prompt_tokens)
        if not fits:
            _stop(episode, "prompt_too_long", seat, text)
            return
        episode.waiting = agent
        return
    episode.done = True


def _stop(episode: _Turns, why: Truncation, selected: Seat, observation: str) -> None:
    """End the episode for everyone; the agents not selected get what they accumulated since their move."""
    env = episode.env
    pending = getattr(env, "_cumulative_rewards", {})
    for agent, seat in episode.seats.items():
        if seat is selected or seat.done:
            continue
        seat.credit(reward_value(pending.get(agent, 0.0), episode.env_id), env.infos.get(agent))
        if agent in env.agents:
            seat.final_observation = observation_text(env.observe(agent), episode.env_id)
    selected.final_observation = observation
    episode.cut(why)
