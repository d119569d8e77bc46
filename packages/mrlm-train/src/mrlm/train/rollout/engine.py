"""Playing batches of episodes: every episode awaiting a reply is answered by one generate call.

Works with any ``gymnasium.Env`` whose observations and actions are ``str``: the MRLM envs, a
``gymnasium.make`` id, or a remote client that is itself a ``gymnasium.Env``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, SupportsFloat, TypeVar

import gymnasium
import numpy as np

from mrlm.train.generation.base import Completion, Generator, SamplingParams
from mrlm.train.rollout.conversation import Conversation
from mrlm.train.rollout.errors import EnvOutputError
from mrlm.train.rollout.trajectory import Trajectory, Truncation

EnvFactory = Callable[[], gymnasium.Env[Any, Any]]

_T = TypeVar("_T")
_R = TypeVar("_R")


@dataclass
class _Episode:
    """An episode in progress; becomes a :class:`Trajectory` when done."""

    env: gymnasium.Env[Any, Any]
    seed: int
    group: int
    conversation: Conversation
    reset_info: dict[str, Any]
    turn_rewards: list[float] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    final_observation: str | None = None
    terminated: bool = False
    truncated: bool = False
    truncation: Truncation | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def cut(self, why: Truncation) -> None:
        self.truncated, self.truncation = True, why


class RolloutEngine:
    """Collects groups of episodes of a text env with a :class:`Generator`.

    Args:
        env: an env id (``mrlm.envs`` or gymnasium registry), or a zero-argument factory building one
            env. The engine keeps a pool of envs, one per concurrent episode, reused across calls.
        generator: the generation backend.
        tokenizer: the policy's tokenizer, with a chat template.
        sampling: sampling parameters of every reply. With ``sampling.seed`` set, each generate call
            gets a seed derived from it, the call count of :meth:`collect` and the turn, so an engine
            built the same way collects the same trajectories, and two calls differ.
        env_kwargs: keyword arguments for the env id (not allowed with a factory).
        env_id: the id recorded in trajectories; defaults to the id, else the env's ``spec.id`` or class name.
        max_turns: replies per episode after which the engine truncates (``"max_turns"``).
        max_prompt_tokens: an episode whose next prompt would be longer ends truncated
            (``"prompt_too_long"``) instead of reaching the model; None for no limit.
        step_workers: threads stepping and resetting envs concurrently (> 1 helps remote envs).
    """

    def __init__(
        self,
        env: str | EnvFactory,
        generator: Generator,
        tokenizer: Any,
        sampling: SamplingParams,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        env_id: str | None = None,
        max_turns: int = 16,
        max_prompt_tokens: int | None = None,
        step_workers: int = 1,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if max_prompt_tokens is not None and max_prompt_tokens < 1:
            raise ValueError(f"max_prompt_tokens must be positive or None, got {max_prompt_tokens}")
        if step_workers < 1:
            raise ValueError(f"step_workers must be at least 1, got {step_workers}")
        self._make_env = _env_factory(env, env_kwargs)
        self.env_id = env_id if env_id is not None else (env if isinstance(env, str) else None)
        self.generator = generator
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.max_turns = max_turns
        self.max_prompt_tokens = max_prompt_tokens
        self.step_workers = step_workers
        self._envs: list[gymnasium.Env[Any, Any]] = []
        self._calls = 0
        self._next_group = 0

    def collect(self, seeds: Sequence[int], group_size: int = 1) -> list[Trajectory]:
        """Play ``group_size`` episodes per seed, each reset with that seed.

        All episodes run together: each round batches the prompts of every episode awaiting a reply
        into one ``generate`` call, then steps each env with its reply.

        Returns:
            ``len(seeds) * group_size`` trajectories, seed-major and group-contiguous: trajectory
            ``i * group_size + g`` is member ``g`` of the group of ``seeds[i]``.
        """
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        tasks = [(int(seed), self._next_group + i) for i, seed in enumerate(seeds) for _ in range(group_size)]
        self._next_group += len(seeds)
        envs = self._pool(len(tasks))
        # Envs run in worker threads; tokenization stays on this thread (tokenizers are not
        # guaranteed thread-safe).
        resets = self._map(lambda job: _reset(*job), list(zip(envs, tasks, strict=True)))
        episodes = [
            self._start(env, task, reset) for env, task, reset in zip(envs, tasks, resets, strict=True)
        ]

        call, turn = self._calls, 0
        self._calls += 1
        while waiting := [e for e in episodes if not e.done]:
            prompts = [e.conversation.token_ids for e in waiting]
            completions = self.generator.generate(prompts, self._round_params(call, turn))
            if len(completions) != len(waiting):
                raise RuntimeError(
                    f"the generator returned {len(completions)} completions for {len(prompts)} prompts"
                )
            replies = [self._add_reply(e, c) for e, c in zip(waiting, completions, strict=True)]
            steps = self._map(lambda job: job[0].env.step(job[1]), list(zip(waiting, replies, strict=True)))
            for episode, step in zip(waiting, steps, strict=True):
                self._record(episode, step)
            turn += 1
        return [self._trajectory(e) for e in episodes]

    def state_dict(self) -> dict[str, int]:
        """The counters that make successive :meth:`collect` calls differ, for checkpoints."""
        return {"calls": self._calls, "next_group": self._next_group}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Continue from :meth:`state_dict`: the next call collects what it would have collected."""
        self._calls = int(state["calls"])
        self._next_group = int(state["next_group"])

    def close(self) -> None:
        """Close every pooled env."""
        for env in self._envs:
            env.close()
        self._envs.clear()

    def __enter__(self) -> RolloutEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------------

    def _pool(self, size: int) -> list[gymnasium.Env[Any, Any]]:
        while len(self._envs) < size:
            self._envs.append(self._make_env())
        return self._envs[:size]

    def _start(
        self, env: gymnasium.Env[Any, Any], task: tuple[int, int], reset: tuple[Any, dict[str, Any]]
    ) -> _Episode:
        (seed, group), (observation, info) = task, reset
        _check_text(observation, "observation", self.env_id or _spec_id(env))
        messages = []
        system_prompt = info.get("system_prompt")
        if system_prompt:
            messages.append({"role": "system", "content": str(system_prompt)})
        messages.append({"role": "user", "content": observation})
        episode = _Episode(env, seed, group, Conversation(self.tokenizer, messages), dict(info))
        if self.max_prompt_tokens is not None and len(episode.conversation) > self.max_prompt_tokens:
            episode.cut("prompt_too_long")
        return episode

    def _add_reply(self, episode: _Episode, completion: Completion) -> str:
        episode.finish_reasons.append(completion.finish_reason)
        return episode.conversation.add_reply(
            completion.token_ids, completion.logprobs, stopped=completion.finish_reason == "stop"
        )

    def _record(self, episode: _Episode, step: tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]) -> None:
        """Keep the env's answer to a reply: end the episode, or append the observation as a user turn."""
        observation, reward, terminated, truncated, info = step
        env_id = self.env_id or _spec_id(episode.env)
        _check_text(observation, "observation", env_id)
        episode.turn_rewards.append(_reward(reward, env_id))
        episode.infos.append(dict(info))
        episode.terminated = bool(terminated)
        if truncated and not terminated:
            episode.cut("env")
        if episode.done:
            episode.final_observation = observation
        elif len(episode.turn_rewards) >= self.max_turns:
            episode.final_observation = observation
            episode.cut("max_turns")
        elif not episode.conversation.add_user(observation, self.max_prompt_tokens):
            episode.final_observation = observation
            episode.cut("prompt_too_long")

    def _round_params(self, call: int, turn: int) -> SamplingParams:
        if self.sampling.seed is None:
            return self.sampling
        # A fresh, reproducible noise stream per generate call: reusing one seed every call would
        # correlate the samples of successive turns and training steps.
        state = np.random.SeedSequence([self.sampling.seed, call, turn]).generate_state(1, np.uint64)[0]
        return dataclasses.replace(self.sampling, seed=int(state >> np.uint64(1)))

    def _trajectory(self, episode: _Episode) -> Trajectory:
        conversation = episode.conversation
        env_id = self.env_id or _spec_id(episode.env)
        return Trajectory(
            env_id=env_id,
            seed=episode.seed,
            group=episode.group,
            messages=conversation.messages,
            token_ids=conversation.token_ids,
            mask=conversation.mask,
            logprobs=conversation.logprobs,
            turn_rewards=episode.turn_rewards,
            finish_reasons=episode.finish_reasons,
            infos=episode.infos,
            reset_info=episode.reset_info,
            final_observation=episode.final_observation,
            terminated=episode.terminated,
            truncated=episode.truncated,
            truncation=episode.truncation,
        )

    def _map(self, fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        if self.step_workers == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(self.step_workers) as pool:
            return list(pool.map(fn, items))


def _env_factory(env: str | EnvFactory, env_kwargs: Mapping[str, Any] | None) -> EnvFactory:
    if not isinstance(env, str):
        if env_kwargs:
            raise ValueError("env_kwargs go with an env id; a factory takes no arguments")
        return env
    kwargs = dict(env_kwargs or {})

    def make() -> gymnasium.Env[Any, Any]:
        import mrlm.envs

        try:
            mrlm.envs.env_entry(env)
        except mrlm.envs.UnknownEnvError:
            if env not in gymnasium.registry:
                raise
            return gymnasium.make(env, **kwargs)
        built: gymnasium.Env[Any, Any] = mrlm.envs.make(env, kind="gymnasium", **kwargs)
        return built

    return make


def _reset(env: gymnasium.Env[Any, Any], task: tuple[int, int]) -> tuple[Any, dict[str, Any]]:
    observation, info = env.reset(seed=task[0])
    return observation, info


def _spec_id(env: gymnasium.Env[Any, Any]) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def _check_text(value: object, what: str, env_id: str) -> None:
    if not isinstance(value, str):
        raise EnvOutputError(
            f"the {what} of env {env_id!r} must be a str (a text env), got {type(value).__name__}"
        )


def _reward(value: object, env_id: str) -> float:
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
