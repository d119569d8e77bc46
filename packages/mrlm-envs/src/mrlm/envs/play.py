"""Play an env from a terminal: a person types the actions and sees what the env answers.

Single-agent envs are played directly. In a multi-agent env the person takes one seat; the other
seats reply with random text from their action space, or are typed by the person too.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Literal, TextIO

from gymnasium import spaces

from mrlm.envs.registry import env_entry, make

Opponent = Literal["sample", "human"]

END_OF_REPLY = "."
QUIT = "/quit"


class Quit(Exception):
    """The person asked to stop (``/quit`` or end of input)."""


class Terminal:
    """Reads replies and writes what the env says. Streams are injectable for tests."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout

    def say(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def read_reply(self, prompt: str, max_length: int | None = None) -> str:
        """Lines up to one holding only ``.``; end of input ends the reply; ``/quit`` stops the game.

        A reply over ``max_length`` characters (the action space's bound) is refused with the reason
        and asked for again: the env would raise on it, ending the session and the episode.
        """
        while True:
            reply = self._read_lines(prompt)
            if max_length is None or len(reply) <= max_length:
                return reply
            self.say(
                f"That reply has {len(reply)} characters; this env accepts at most {max_length} "
                "(max_action_length). Please type a shorter one."
            )

    def _read_lines(self, prompt: str) -> str:
        self.say(f"{prompt} (end with a line holding only '{END_OF_REPLY}', or {QUIT} to stop):")
        lines: list[str] = []
        while True:
            line = self.stdin.readline()
            if line == "":  # end of input
                if not lines:
                    raise Quit
                break
            line = line.rstrip("\n")
            if line.strip() == QUIT:
                raise Quit
            if line == END_OF_REPLY:
                break
            lines.append(line)
        return "\n".join(lines)

    def read_choice(self, prompt: str, choices: list[str]) -> str:
        while True:
            self.say(f"{prompt} [{'/'.join(choices)}]:")
            line = self.stdin.readline()
            if line == "":
                raise Quit
            if line.strip() in choices:
                return line.strip()
            self.say(f"Please type one of: {', '.join(choices)}")


def _max_length(space: spaces.Space[Any]) -> int | None:
    """The longest reply a text action space admits, or None for a space with no such bound."""
    return space.max_length if isinstance(space, spaces.Text) else None


def _show_info(terminal: Terminal, info: dict[str, Any]) -> None:
    if info:
        terminal.say(f"info: {json.dumps(info, default=repr, ensure_ascii=False)}")


def play(
    env_id: str,
    *,
    seed: int | None = None,
    agent: str | None = None,
    opponent: Opponent = "sample",
    env_kwargs: dict[str, Any] | None = None,
    terminal: Terminal | None = None,
) -> dict[str, float]:
    """Play one episode of ``env_id``; return the total reward of each seat played (``""`` for one agent)."""
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be >= 0 (an env's reset takes no negative seed), got {seed}")
    term = terminal or Terminal()
    entry = env_entry(env_id)
    if not entry.multi_agent and (agent is not None or opponent != "sample"):
        # The person plays the only agent; a seat or opponents asked for would be silently ignored.
        asked = f"a seat ({agent!r}) applies" if agent is not None else f"{opponent!r} opponents apply"
        raise ValueError(f"{entry.id} has one agent: {asked} to multi-agent envs only")
    kwargs = dict(env_kwargs or {})
    term.say(f"== {entry.id}: {entry.description}")
    try:
        if not entry.multi_agent:
            return _play_single(env_id, seed, kwargs, term)
        if entry.kinds[0] == "aec" or "parallel" not in entry.kinds:
            return _play_aec(env_id, seed, agent, opponent, kwargs, term)
        return _play_parallel(env_id, seed, agent, opponent, kwargs, term)
    except Quit:
        term.say("Stopped.")
        return {}


def _play_single(env_id: str, seed: int | None, kwargs: dict[str, Any], term: Terminal) -> dict[str, float]:
    env = make(env_id, **kwargs)
    try:
        observation, info = env.reset(seed=seed)
        system_prompt = info.pop("system_prompt", None)
        if system_prompt:
            term.say(f"[system] {system_prompt}")
        term.say(f"[env] {observation}")
        _show_info(term, info)
        total = 0.0
        while True:
            action = term.read_reply("Your reply", _max_length(env.action_space))
            observation, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            term.say(f"[env] {observation}")
            term.say(f"reward: {reward:g}  terminated: {terminated}  truncated: {truncated}")
            _show_info(term, info)
            if terminated or truncated:
                term.say(
                    f"Episode over ({'terminated' if terminated else 'truncated'}). Total reward: {total:g}"
                )
                return {"": total}
    finally:
        env.close()


def _choose_seat(agents: list[str], agent: str | None, term: Terminal) -> str:
    if agent is not None:
        if agent not in agents:
            raise ValueError(f"no agent {agent!r} in this env; agents are {', '.join(agents)}")
        return agent
    return term.read_choice("Which agent do you play?", agents)


def _opponent_policy(env: Any, opponent: Opponent, term: Terminal) -> Callable[[str], str]:
    def act(agent: str) -> str:
        if opponent == "human":
            return term.read_reply(f"Reply for {agent}", _max_length(env.action_space(agent)))
        action = str(env.action_space(agent).sample())
        term.say(f"[{agent}] (random) {action}")
        return action

    return act


def _play_aec(
    env_id: str,
    seed: int | None,
    agent: str | None,
    opponent: Opponent,
    kwargs: dict[str, Any],
    term: Terminal,
) -> dict[str, float]:
    env = make(env_id, kind="aec", **kwargs)
    try:
        env.reset(seed=seed)
        seat = _choose_seat(list(env.possible_agents), agent, term)
        others = _opponent_policy(env, opponent, term)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for current in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            totals[current] += float(reward)
            if terminated or truncated:
                env.step(None)
                continue
            if current == seat:
                term.say(f"[to {seat}] {observation['text']}")
                _show_info(term, info)
                env.step(term.read_reply(f"Your reply as {seat}", _max_length(env.action_space(seat))))
            else:
                env.step(others(current))
        term.say(f"Episode over. Total rewards: {json.dumps(totals)}")
        return totals
    finally:
        env.close()


def _play_parallel(
    env_id: str,
    seed: int | None,
    agent: str | None,
    opponent: Opponent,
    kwargs: dict[str, Any],
    term: Terminal,
) -> dict[str, float]:
    env = make(env_id, kind="parallel", **kwargs)
    try:
        observations, infos = env.reset(seed=seed)
        seat = _choose_seat(list(env.possible_agents), agent, term)
        others = _opponent_policy(env, opponent, term)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        while env.agents:
            actions = {}
            for current in env.agents:
                if current == seat:
                    term.say(f"[to {seat}] {observations[seat]['text']}")
                    _show_info(term, infos.get(seat, {}))
                    space = env.action_space(seat)
                    actions[current] = term.read_reply(f"Your reply as {seat}", _max_length(space))
                else:
                    actions[current] = others(current)
            observations, rewards, terminations, truncations, infos = env.step(actions)
            for name, reward in rewards.items():
                totals[name] += float(reward)
            term.say(f"rewards: {json.dumps(rewards)}")
            if seat in terminations and (terminations[seat] or truncations[seat]):
                term.say(f"[to {seat}] {observations[seat]['text']}")
        term.say(f"Episode over. Total rewards: {json.dumps(totals)}")
        return totals
    finally:
        env.close()
