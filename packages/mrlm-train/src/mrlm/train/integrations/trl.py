"""TRL's ``GRPOTrainer`` on any MRLM env, local or served (``grpc://host:port/mrlm/Math-v0``).

Three pieces, each matching a contract of TRL (>= 1.16) and none importing it:

* :func:`env_dataset` turns env seeds into a dataset: one row per seed with the conversation the
  rollout engine would open (the env's system prompt from its reset info, then the first observation
  as the user turn), the ``seed`` and the env's ``environment`` name;
* :func:`env_reward` is a reward function (single turn): for each completion it resets an env with
  the row's seed, steps it once with the reply's text and returns the env's reward;
* :func:`env_factory` is an ``environment_factory`` (multi-turn, tool style): each instance holds one
  env, resets it with the row's seed, offers the model one tool, ``submit(text)``, that steps the env
  and returns its observation, and reports the episode's return through ``get_reward()``.

Both read the task from the seed, never from the prompt text, so a reward is the env's own for the
task the model was shown (each checks that the prompt holds the env's observation for that seed).

Example (single turn)::

    from trl import GRPOConfig, GRPOTrainer
    from mrlm.train.integrations.trl import env_dataset, env_reward

    kwargs = {"level": 1}
    trainer = GRPOTrainer(
        model="Qwen/Qwen3-0.6B",
        reward_funcs=env_reward("mrlm/Math-v0", kwargs),
        train_dataset=env_dataset("mrlm/Math-v0", range(1000), kwargs),
        args=GRPOConfig(output_dir="out"),
    )
    trainer.train()

Multi-turn: ``GRPOTrainer(..., environment_factory=env_factory("mrlm/Math-v0", {"max_turns": 3}))``
with the same dataset and no ``reward_funcs``. See ``docs/trl.md``.
"""

from __future__ import annotations

import operator
import reprlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from mrlm.train.rollout.envs import env_factory as _env_maker
from mrlm.train.rollout.envs import kind_of, observation_text, reward_value
from mrlm.train.rollout.prompts import SystemPrompt, default_system_prompt

if TYPE_CHECKING:
    from datasets import Dataset  # type: ignore[import-untyped]

__all__ = [
    "EPISODE_OVER",
    "EnvReward",
    "EnvSource",
    "EnvTool",
    "env_dataset",
    "env_factory",
    "env_reward",
    "env_rows",
]

#: An env id (registered, ``grpc://``/``grpcs://`` remote, or a Gymnasium id) or a zero-argument
#: callable returning a single-agent ``gymnasium.Env`` with ``str`` observations and actions.
EnvSource = str | Callable[[], Any]

EPISODE_OVER = "The episode is over. Reply without calling a tool."
"""What ``submit`` returns once the episode has ended (the env is not stepped again)."""

_REMOTE_SCHEMES = ("grpc://", "grpcs://")


def env_rows(
    env: EnvSource,
    seeds: int | Iterable[int],
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    system_prompt: SystemPrompt = default_system_prompt,
) -> list[dict[str, Any]]:
    """One row per seed: ``{"prompt": [messages], "seed": s, "environment": name}``.

    The prompt is the conversation the rollout engine opens for ``reset(seed=s)``: a system turn
    when ``system_prompt(None, info)`` gives one (by default the env's ``system_prompt`` info), then
    the observation as the user turn.

    Args:
        env: an env id or a factory (see :data:`EnvSource`); remote ids work the same.
        seeds: the task seeds, or a count ``n`` for seeds ``0 .. n-1``.
        env_kwargs: keyword arguments of the env, a mapping (with an id only).
        name: the ``environment`` column; defaults to the env id without its server
            (``grpc://host:1234/mrlm/Math-v0`` -> ``mrlm/Math-v0``) or the factory's name. Reward
            functions and TRL's ``environment_factory`` dict use it to route rows (mixtures).
        system_prompt: ``system_prompt(agent, reset_info)``, as in ``RolloutEngine``.
    """
    label = name or _default_name(env)
    make = _maker(env, env_kwargs, label)
    instance = make()
    try:
        rows = []
        for seed in _seed_list(seeds):
            observation, info = instance.reset(seed=seed)
            messages = []
            system = system_prompt(None, info)
            if system:
                messages.append({"role": "system", "content": system})
            messages.append({"role": "user", "content": observation_text(observation, label)})
            rows.append({"prompt": messages, "seed": seed, "environment": label})
    finally:
        instance.close()
    return rows


def env_dataset(
    env: EnvSource,
    seeds: int | Iterable[int],
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    system_prompt: SystemPrompt = default_system_prompt,
) -> Dataset:
    """:func:`env_rows` as a ``datasets.Dataset`` (columns ``prompt``, ``seed``, ``environment``).

    A mixture is ``datasets.concatenate_datasets`` of one dataset per env, each with its own name.
    """
    from datasets import Dataset

    return Dataset.from_list(env_rows(env, seeds, env_kwargs, name=name, system_prompt=system_prompt))


class EnvReward:
    """A TRL reward function scoring each completion with one step of an env (single turn).

    ``reward(prompts, completions, seed=[...], environment=[...], **columns)`` returns one float per
    completion: the env is reset with the row's seed and stepped with the reply's text (a completion
    string, or the content of the last assistant message of a conversational completion), and the
    step's reward is returned. Rows whose ``environment`` column names another env get ``None``, which
    TRL leaves out of that row's sum, so a list of these functions scores a mixture. TRL logs the
    rewards as ``rewards/<name>/mean``.

    Envs are built on first use and kept in a pool, one per concurrent worker; a call scores its
    completions on ``workers`` threads (each env used by one thread at a time), so a remote env's
    round trips overlap.
    """

    def __init__(
        self,
        env: EnvSource,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        workers: int = 4,
        check_prompts: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.name = name or _default_name(env)
        self.__name__ = self.name  # TRL names a reward function's metrics after it
        self.workers = workers
        self.check_prompts = check_prompts
        self._make = _maker(env, env_kwargs, self.name)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        seed: Sequence[int] | None = None,
        environment: Sequence[str] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        if seed is None:
            raise ValueError(
                f"reward {self.name!r}: the dataset rows carry no 'seed' column; build them with env_dataset()"
            )
        mine = [environment is None or environment[i] == self.name for i in range(len(completions))]

        def score(i: int) -> float | None:
            return self._score(prompts[i], completions[i], seed[i]) if mine[i] else None

        count = sum(mine)
        if self.workers == 1 or count <= 1:
            return [score(i) for i in range(len(completions))]
        with ThreadPoolExecutor(max_workers=min(self.workers, count)) as pool:
            return list(pool.map(score, range(len(completions))))

    def close(self) -> None:
        """Close the pooled envs (remote ones end their server sessions)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for env in idle:
            env.close()

    def _score(self, prompt: Any, completion: Any, seed: int) -> float:
        env = self._borrow()
        try:
            observation, _ = env.reset(seed=_seed(seed))
            if self.check_prompts:
                _check_prompt(prompt, observation_text(observation, self.name), seed, self.name)
            _, reward, _, _, _ = env.step(_completion_text(completion))
            return reward_value(reward, self.name)
        finally:
            with self._lock:
                self._idle.append(env)

    def _borrow(self) -> Any:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._make()


def env_reward(
    env: EnvSource,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    workers: int = 4,
    check_prompts: bool = True,
) -> EnvReward:
    """A TRL reward function (``reward_funcs=``) that scores a completion with one env step.

    Args:
        env: an env id or a factory (see :data:`EnvSource`); remote ids work the same.
        env_kwargs: keyword arguments of the env, a mapping (with an id only); the same as the dataset's.
        name: the env's name in the ``environment`` column (see :func:`env_rows`).
        workers: completions scored at once, each on its own env.
        check_prompts: raise ``ValueError`` when a row's prompt does not hold the env's observation
            for its seed (a dataset built with other env arguments, or from another env).
    """
    return EnvReward(env, env_kwargs, name=name, workers=workers, check_prompts=check_prompts)


class EnvTool:
    """One MRLM env in the shape TRL's ``environment_factory`` asks for (multi-turn, tool style).

    TRL calls ``reset(**row)`` before each rollout, exposes every public method but ``reset`` and
    ``get_reward`` to the model as a tool, and scores the rollout with ``get_reward()`` (logged as
    ``rewards/EnvTool/mean``). Here:

    * ``reset`` resets the env with the row's ``seed``. When the row's prompt already holds the
      observation (an :func:`env_dataset` row) it returns None; when the prompt's last user turn is
      empty it returns the observation, which TRL writes there;
    * ``submit(text)``, the one tool, steps the env with ``text`` and returns its observation; once
      the episode has ended (terminated or truncated) it returns :data:`EPISODE_OVER`;
    * ``get_reward`` returns the episode's return, the sum of the step rewards (0.0 when the model
      never submitted: a reply without a tool call ends the rollout and never reaches the env).
    """

    def __init__(self, make: Callable[[], Any], name: str, check_prompts: bool = True) -> None:
        self._env = make()
        self._name = name
        self._check_prompts = check_prompts
        self._return = 0.0
        self._over = True

    def reset(self, **row: Any) -> str | None:
        """Start the episode of the row's seed; the observation when the prompt lacks it."""
        if row.get("seed") is None:
            raise ValueError(
                f"env {self._name!r}: the dataset rows carry no 'seed' column; build them with env_dataset()"
            )
        seed = row["seed"]
        observation, _ = self._env.reset(seed=_seed(seed))
        text = observation_text(observation, self._name)
        self._return, self._over = 0.0, False
        if not _last_user_text(row.get("prompt")):
            return text
        if self._check_prompts:
            _check_prompt(row.get("prompt"), text, seed, self._name)
        return None

    def submit(self, text: str) -> str:
        """Send your reply to the environment and read its response.

        Args:
            text: Your reply to the task: an answer, a move, code or a message, as the task asks.

        Returns:
            The environment's response: feedback on the reply, or what happens next.
        """
        if self._over:
            return EPISODE_OVER
        observation, reward, terminated, truncated, _ = self._env.step(text)
        self._return += reward_value(reward, self._name)
        self._over = bool(terminated or truncated)
        return observation_text(observation, self._name)

    def get_reward(self) -> float:
        """The episode's return so far (TRL calls this once the rollout is over)."""
        return self._return


def env_factory(
    env: EnvSource,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    check_prompts: bool = True,
) -> Callable[[], EnvTool]:
    """A TRL ``environment_factory``: each call builds an :class:`EnvTool` around a new env.

    Args:
        env: an env id or a factory (see :data:`EnvSource`); remote ids work the same, each
            :class:`EnvTool` holding its own server session.
        env_kwargs: keyword arguments of the env, a mapping (with an id only); the same as the dataset's.
        name: the env's name in errors (TRL's dict of factories routes rows by its own keys).
        check_prompts: raise ``ValueError`` when a row's prompt does not hold the env's observation
            for its seed.
    """
    label = name or _default_name(env)
    make = _maker(env, env_kwargs, label)

    def build() -> EnvTool:
        return EnvTool(make, label, check_prompts)

    return build


def _default_name(env: EnvSource) -> str:
    if not isinstance(env, str):
        return str(getattr(env, "__name__", type(env).__name__))
    if env.startswith(_REMOTE_SCHEMES):
        from mrlm.envs.remote.address import parse_remote_id

        return parse_remote_id(env).env_id
    return env


def _maker(env: EnvSource, env_kwargs: Mapping[str, Any] | None, label: str) -> Callable[[], Any]:
    """A zero-argument builder of the single-agent env; TypeError for a multi-agent one, and at once
    for ``env_kwargs`` that are not a mapping (``dict()`` would fail on them with a puzzling message)."""
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
        raise TypeError(
            f"env_kwargs must be a mapping of the env's keyword arguments (a dict), "
            f"got {type(env_kwargs).__name__}: {reprlib.repr(env_kwargs)}"
        )
    make = _env_maker(env, env_kwargs, "gymnasium")

    def build() -> Any:
        instance = make()
        kind = kind_of(instance)
        if kind != "gymnasium":
            instance.close()
            raise TypeError(f"env {label!r} is a multi-agent ({kind}) env; TRL trains single-agent envs")
        return instance

    return build


def _seed_list(seeds: int | Iterable[int]) -> list[int]:
    if isinstance(seeds, int):
        if seeds < 0:
            raise ValueError(f"a seed count must be >= 0, got {seeds}")
        return list(range(seeds))
    return [_seed(seed) for seed in seeds]


def _seed(seed: Any) -> int:
    if isinstance(seed, bool):
        raise TypeError(f"a seed must be an integer, got {seed!r}")
    try:
        return operator.index(seed)
    except TypeError:
        raise TypeError(f"a seed must be an integer, got {seed!r}") from None


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a multimodal content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))


def _last_user_text(prompt: Any) -> str:
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    users = [message for message in prompt if message.get("role") == "user"]
    return _text(users[-1].get("content")) if users else ""


def _completion_text(completion: Any) -> str:
    """The reply of a completion: the string itself, or the last assistant message's content."""
    if isinstance(completion, str):
        return completion
    replies = [message for message in completion if message.get("role") == "assistant"]
    return _text(replies[-1].get("content")) if replies else ""


def _check_prompt(prompt: Any, observation: str, seed: Any, name: str) -> None:
    if observation not in _last_user_text(prompt):
        raise ValueError(
            f"env {name!r}, seed {seed}: the row's prompt does not hold the env's observation for that "
            "seed; build the dataset with env_dataset() from the same env and env_kwargs "
            "(or pass check_prompts=False)"
        )
