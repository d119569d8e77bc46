"""Playing Gymnasium and PettingZoo Parallel envs in the ``align`` joint mode.

Every episode of the batch advances one round at a time: the prompts of every live agent of every
episode are answered together (one generate call per policy), then each env plays its joint action.
Each agent's reward for a round is credited to its reply of that round.

An episode ends when the env ends it, or for every agent at once when the rollout must stop it: an
agent reached ``max_turns`` replies, or an agent's next prompt exceeds ``max_prompt_tokens`` (the
others could not act without it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from mrlm.train.rollout.context import Episode, Rollout, Task
from mrlm.train.rollout.rounds import Agent, AgentResult, RoundEnv

_E = TypeVar("_E", bound=Episode)


def start_episodes(
    rollout: Rollout,
    envs: Sequence[RoundEnv],
    tasks: Sequence[Task],
    make: Callable[[RoundEnv, Task, str], _E],
) -> list[_E]:
    """Reset ``envs[i]`` with ``tasks[i].seed`` (concurrently) and seat every agent with its first
    prompt; an episode whose opening prompt is too long starts cut (``"prompt_too_long"``)."""
    resets = rollout.map(lambda job: job[0].reset(job[1].seed), list(zip(envs, tasks, strict=True)))
    episodes = []
    for env, task, (observations, infos) in zip(envs, tasks, resets, strict=True):
        episode = make(env, task, env.env_id)
        fits = True
        for agent, observation in observations.items():
            seat = episode.seats[agent] = rollout.seat(agent, task, infos.get(agent, {}))
            fits = rollout.open(seat, observation) and fits
        if not fits:
            episode.cut("prompt_too_long")
        episodes.append(episode)
    return episodes


def play_rounds(rollout: Rollout, envs: Sequence[RoundEnv], tasks: Sequence[Task]) -> list[Episode]:
    """Play one episode per task, ``envs[i]`` reset with ``tasks[i].seed``; return the finished episodes."""
    episodes = start_episodes(rollout, envs, tasks, Episode)

    turn = 0
    while live := [e for e in episodes if not e.done]:
        waiting = [(e, e.seats[agent]) for e in live for agent in e.env.agents]
        completions = rollout.generate([seat for _, seat in waiting], turn)
        actions: dict[int, dict[Agent, str]] = {id(e): {} for e in live}
        for (episode, seat), completion in zip(waiting, completions, strict=True):
            actions[id(episode)][seat.agent] = seat.reply(completion)
        jobs = [(e.env, actions[id(e)]) for e in live]
        outcomes = rollout.map(lambda job: job[0].play(job[1]), jobs)
        for episode, outcome in zip(live, outcomes, strict=True):
            record_round(rollout, episode, outcome)
        turn += 1
    return episodes


def record_round(rollout: Rollout, episode: Episode, outcome: dict[Agent, AgentResult]) -> None:
    """Credit the round's rewards; then end the episode, or show each live agent its observation."""
    for agent, result in outcome.items():
        seat = episode.seats.get(agent)
        if seat is None:
            continue
        seat.credit(result.reward, result.info)
        if result.terminated or result.truncated:
            seat.end(result.observation, result.terminated, result.truncated)
    env: RoundEnv = episode.env
    live = env.agents
    if not live:
        episode.done = True
        return
    observations = env.observations()
    if any(agent in episode.seats and episode.seats[agent].num_turns >= rollout.max_turns for agent in live):
        episode.cut("max_turns", observations)
        return
    # Extend every live agent's conversation, undoing all if one does not fit: no conversation may
    # end with a prompt left unanswered.
    snapshots = {
        agent: seat.conversation.copy()
        for agent, seat in episode.seats.items()
        if agent in live and seat.conversation is not None
    }
    for agent in live:
        seat = episode.seats.get(agent)
        if seat is None:  # an agent that joined during the episode
            seat = episode.seats[agent] = rollout.seat(agent, episode.task, {})
            fits = rollout.open(seat, observations[agent])
        else:
            fits = seat.ask(observations[agent], rollout.max_prompt_tokens)
        if not fits:
            for other, conversation in snapshots.items():
                episode.seats[other].conversation = conversation
            episode.cut("prompt_too_long", observations)
            return
