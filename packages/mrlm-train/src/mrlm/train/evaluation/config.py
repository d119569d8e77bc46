"""What ``mrlm-train eval`` and ``mrlm-train collect`` play: the model(s), the env(s), the tasks, the sampling.

Task seeds. Training draws its task seeds from ``run.seed * 1_000_000`` on (one per task, spread over
processes; see :func:`~mrlm.train.algorithms.onpolicy.run_task_seeds`), so a run with ``run.seed``
below 1000 that draws fewer than a million tasks stays below ``10**9``. The default seeds here are
``EVAL_SEED_BASE + i`` (``10**9`` on), the quickstart's evaluation seeds: disjoint from those runs'
and comparable with the quickstart's own numbers. A seed fixes the task (``reset(seed=s)`` is
deterministic), so the same seeds and flags give the same episodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import tyro

from mrlm.train.algorithms.onpolicy import parse_env_kwargs
from mrlm.train.generation.base import check_sampling
from mrlm.train.mixture import parse_mixture
from mrlm.train.policy import Dtype, check_agent_models
from mrlm.train.rollout.errors import describe_seeds
from mrlm.train.setting_checks import check_counts
from mrlm.train.task_seeds import EVAL_SEED_BASE


@dataclass(frozen=True)
class EnvSpec:
    """One env to play: what the records call it, its id and its keyword arguments."""

    label: str
    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class PlayConfig:
    """The flags that say what to play: shared by ``mrlm-train eval`` and ``mrlm-train collect``."""

    model: str = tyro.MISSING
    """The policy: a Hugging Face model name or path, or "tiny" for the small local model; in a
    multi-agent env every agent's model unless agent_models names another."""
    agent_models: dict[str, str] = field(default_factory=dict)
    """A model name or path per agent of a multi-agent env (--agent-models first PATH second PATH);
    agents left out play model."""
    env_id: str = "mrlm/Math-v0"
    """Environment id (``mrlm-envs list``), local or remote (grpc://host:port/id)."""
    env_kwargs: str = "{}"
    """The env's keyword arguments as a JSON object, such as '{"level": 1}'."""
    env_mixture: str = ""
    """Several envs, replacing env_id and env_kwargs: the JSON list training takes (see
    mrlm.train.mixture); every env plays every task seed, and the report has a row per env (weights
    are not used)."""
    kind: Literal["parallel", "aec"] | None = None
    """A multi-agent env's API: "parallel" or "aec"; None: the id's default."""

    num_episodes: Annotated[int, tyro.conf.arg(aliases=("-n",))] = 100
    """Tasks to play: the seeds seed_start .. seed_start + num_episodes - 1, each played by every
    sample (in every env of a mixture)."""
    seed_start: int = EVAL_SEED_BASE
    """First task seed. The default (10**9) is above the seeds of any training run with run.seed < 1000."""
    seeds: tuple[int, ...] = ()
    """Explicit task seeds, replacing seed_start and num_episodes."""

    max_new_tokens: int = 256
    """Longest reply, in tokens."""
    temperature: float = 0.0
    """Sampling temperature; 0 is greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    max_turns: int = 1
    """Replies per agent after which an episode is cut, as the trainers' max_turns (raise it for
    multi-turn envs)."""
    sampling_seed: int = 0
    """Seed of the sampling noise: the same flags give the same episodes."""

    dtype: Dtype = "float32"
    """Weights dtype; "auto" keeps the checkpoint's."""
    device: str = "auto"
    """Where the models run: "cpu", "cuda", "cuda:1", ...; "auto" takes the GPU when there is one."""
    batch_size: int = 64
    """Episodes played together (one generate call per round holds at most this many prompts per model)."""
    step_workers: int = 1
    """Threads resetting and stepping envs (more help remote envs)."""
    progress_bar: bool = True
    """Show a progress line (episodes played, mean reward, time left) on stderr."""

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("model must name a model: a Hugging Face name or path, or 'tiny'")
        # tyro hands over tuples and dicts, YAML files lists: keep one type.
        self.seeds = tuple(int(seed) for seed in self.seeds)
        self.agent_models = dict(self.agent_models)
        check_agent_models(self.agent_models)
        if self.num_episodes < 1 and not self.seeds:
            raise ValueError(f"num_episodes must be at least 1, got {self.num_episodes}")
        if min(self.seeds, default=0) < 0 or self.seed_start < 0:
            raise ValueError("task seeds must be >= 0 (an env's reset takes no negative seed)")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds repeats a seed: each seed is one task, give it once")
        check_sampling(self.max_new_tokens, self.temperature, self.top_p)
        check_counts(max_turns=self.max_turns, batch_size=self.batch_size, step_workers=self.step_workers)
        self.envs()  # refuse bad env_kwargs or env_mixture JSON now, not after the model loads

    def envs(self) -> list[EnvSpec]:
        """The envs to play: env_id with env_kwargs, or each env of env_mixture."""
        if self.env_mixture:
            return [
                EnvSpec(entry.label, entry.env_id, dict(entry.kwargs))
                for entry in parse_mixture(self.env_mixture)
            ]
        return [EnvSpec(self.env_id, self.env_id, parse_env_kwargs(self.env_kwargs))]

    def task_seeds(self) -> list[int]:
        """The task seeds: ``seeds`` when given, else ``seed_start`` and the ``num_episodes`` after it."""
        if self.seeds:
            return list(self.seeds)
        return list(range(self.seed_start, self.seed_start + self.num_episodes))


def describe_plan(seeds: Sequence[int], per_task: int, unit: str, envs: int = 1) -> str:
    """The line ``collect`` and ``eval`` print before playing, e.g.
    ``seeds: 0..2 (3 tasks x 4 samples, in each of 2 envs)``."""
    where = f", in each of {envs} envs" if envs > 1 else ""
    return (
        f"seeds: {describe_seeds(seeds)} ({counted(len(seeds), 'task')} x {counted(per_task, unit)}{where})"
    )


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``3 tasks``: a count and its noun, plural (``noun + "s"`` unless given) unless
    the count is 1."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
