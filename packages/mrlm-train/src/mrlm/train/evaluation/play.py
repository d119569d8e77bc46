"""Playing a model on env tasks: every task seed ``samples`` times, in every env, with a progress line.

:func:`play` is what ``mrlm-train eval`` and ``mrlm-train collect`` run: it checks each env (built and
reset once, before any model loads), loads the model or one model per agent (:func:`load_players`)
and plays the tasks with the rollout engine (:func:`play_episodes`), batch after batch. The result is
the engine's trajectories: one per episode in a single-agent env, one per agent and episode in a
multi-agent env, each with its env's name, task seed and sample index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mrlm.train.algorithms.multi_agent import MultiAgentSetupError
from mrlm.train.evaluation.config import EnvSpec, PlayConfig
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop.progress import Progress
from mrlm.train.policy import Dtype, ModelConfig, load_policy, names_agent
from mrlm.train.rollout import DEFAULT_POLICY, Policy, RolloutEngine, Trajectory
from mrlm.train.rollout.envs import EnvKind, env_factory, started_env
from mrlm.train.setting_checks import check_counts


class DeviceError(ValueError):
    """A device torch does not know, or one this machine does not have (found before any model loads)."""


@dataclass(frozen=True)
class Players:
    """The policies that play, and which one plays each agent.

    Attributes:
        policies: the policies by name: ``"policy"`` (the shared model) and one per agent given its
            own model; only those some agent plays.
        agent_policies: the policy name of an agent (None is the agent of a single-agent env).
        models: the model name or path of each policy.
    """

    policies: dict[str, Policy]
    agent_policies: Callable[[str | None], str]
    models: dict[str, str]


@dataclass(frozen=True)
class Played:
    """What :func:`play` played."""

    trajectories: list[Trajectory]
    envs: list[EnvSpec]
    seeds: list[int]
    samples: int
    agents: dict[str, list[str] | None]
    """Each env's agents (None for a single-agent env), by env name."""
    models: dict[str, str]
    """The model of each policy."""


def play(config: PlayConfig, samples: int, *, into: list[Trajectory] | None = None) -> Played:
    """Play each task seed of ``config`` ``samples`` times in each of its envs (see the module docstring).

    ``into``: as :func:`play_episodes` takes it, for a caller that keeps what was played when the
    play ends early.

    Raises:
        UnknownEnvError, EnvArgumentError: an env id that names no env, or arguments it does not take.
        EnvFailedError: an env that raised when built, reset or stepped.
        MultiAgentSetupError: ``agent_models`` names an agent no env has.
        FileNotFoundError, ModelNotFoundError: a model path that holds no model.
        NoChatTemplateError: a model whose tokenizer has no chat template.
    """
    specs = config.envs()
    seeds = config.task_seeds()
    agents = {spec.label: probe_env(spec, config.kind, seeds[0]) for spec in specs}
    players = load_players(
        config.model, config.agent_models, agents, dtype=config.dtype, device=config.device
    )
    sampling = SamplingParams(
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.sampling_seed,
    )
    trajectories = play_episodes(
        specs,
        players,
        seeds,
        samples,
        sampling,
        kind=config.kind,
        max_turns=config.max_turns,
        batch_size=config.batch_size,
        step_workers=config.step_workers,
        progress_bar=config.progress_bar,
        into=into,
    )
    return Played(trajectories, specs, seeds, samples, agents, players.models)


def tasks_in(trajectories: Sequence[Trajectory]) -> int:
    """How many tasks (an env and a seed) ``trajectories`` play."""
    return len({(row.env_id, row.seed) for row in trajectories})


def probe_env(spec: EnvSpec, kind: EnvKind | None, seed: int) -> list[str] | None:
    """Build ``spec``'s env and reset it with ``seed``; return its agents (None: a single-agent env).

    An env that cannot even start fails here, in one line, before any model loads.

    Raises:
        UnknownEnvError, EnvArgumentError: as the registry raises them.
        EnvFailedError: anything else the env raised.
    """
    with started_env(env_factory(spec.env_id, spec.kwargs, kind), spec.label, seed) as env:
        agents = getattr(env, "possible_agents", None)
    return [str(agent) for agent in agents] if agents else None


def load_players(
    model: str,
    agent_models: Mapping[str, str],
    agents: Mapping[str, Sequence[str] | None],
    *,
    dtype: Dtype = "float32",
    device: str = "auto",
) -> Players:
    """Load ``model`` for every agent, and the model ``agent_models`` names for the agents it names.

    Each distinct model is loaded once (agents with the same path share it).

    Args:
        agents: each env's agents (None for a single-agent env), by env name.

    Raises:
        MultiAgentSetupError: ``agent_models`` names an agent that no env has.
        DeviceError: ``device`` is no torch device, or one this machine lacks.
        FileNotFoundError, ModelNotFoundError: a model path that holds no model.
        NoChatTemplateError: a model whose tokenizer has no chat template.
    """
    known = {agent for names in agents.values() for agent in names or ()}
    unknown = sorted(set(agent_models) - known)
    if unknown:
        have = ", ".join(f"{env}: {names or 'one agent'}" for env, names in agents.items())
        raise MultiAgentSetupError(f"agent_models names agents {unknown} that no env has ({have})")
    if DEFAULT_POLICY in agent_models:
        raise MultiAgentSetupError(
            f"agent_models cannot name an agent {DEFAULT_POLICY!r}: that is the name of the shared model's policy"
        )

    def policy_of(agent: str | None) -> str:
        return agent if agent is not None and agent in agent_models else DEFAULT_POLICY

    used: list[str] = []
    for names in agents.values():
        members: Sequence[str | None] = names if names else [None]  # None: a single-agent env's agent
        used += [policy_of(agent) for agent in members]
    models = {name: agent_models.get(name, model) for name in dict.fromkeys(used)}
    target = _device(device)
    loaded: dict[str, Policy] = {}
    policies: dict[str, Policy] = {}
    for name, path in models.items():
        if path not in loaded:
            lm, tokenizer = load_policy(ModelConfig(name_or_path=path, dtype=dtype), chat=True)
            # Conversations open as the model's training opened them.
            loaded[path] = Policy(
                HFGenerator(lm.to(target), tokenizer), tokenizer, names_agent=names_agent(path)
            )
        policies[name] = loaded[path]
    return Players(policies, policy_of, models)


def play_episodes(
    envs: Sequence[EnvSpec],
    players: Players,
    seeds: Sequence[int],
    samples: int,
    sampling: SamplingParams,
    *,
    kind: EnvKind | None = None,
    max_turns: int = 1,
    batch_size: int = 64,
    step_workers: int = 1,
    progress_bar: bool = False,
    into: list[Trajectory] | None = None,
) -> list[Trajectory]:
    """Play every seed ``samples`` times in each env; the trajectories, env by env in ``envs`` order.

    ``into``: the list the trajectories are appended to (and that is returned), batch by batch as
    each batch's tasks are played in full, so that a caller holding it keeps what was played when an
    exception (an env server gone, Ctrl-C) ends the play.

    Each env has its own rollout engine; the seeds go to it in batches of ``batch_size // samples``
    tasks (at least one), all the samples of a task in one batch. Within an env the rows are
    group-contiguous and seed-major (see :class:`~mrlm.train.rollout.RolloutEngine`), each
    trajectory's ``sample`` its index among its task's samples.

    Raises:
        EnvFailedError: an env's own code raised during an episode.
    """
    check_counts(samples=samples, batch_size=batch_size)
    tasks_per_batch = max(1, batch_size // samples)
    total = len(envs) * len(seeds) * samples
    progress = Progress(total, unit="episodes") if progress_bar else None
    played: list[Trajectory] = [] if into is None else into
    episodes = 0
    reward_sum = 0.0
    try:
        for index, spec in enumerate(envs):
            # Each env its own noise stream, as training's mixtures do.
            env_sampling = dataclasses.replace(
                sampling, seed=None if sampling.seed is None else sampling.seed + 7919 * index
            )
            with RolloutEngine(
                spec.env_id,
                players.policies,
                sampling=env_sampling,
                agent_policies=players.agent_policies,
                kind=kind,
                env_kwargs=spec.kwargs,
                env_id=spec.label,
                max_turns=max_turns,
                step_workers=step_workers,
            ) as engine:
                for start in range(0, len(seeds), tasks_per_batch):
                    batch = list(seeds[start : start + tasks_per_batch])
                    rows = engine.collect(batch, samples)  # an env that raises: EnvFailedError
                    played += rows
                    episodes += len(batch) * samples
                    reward_sum += sum(row.total_reward for row in rows)
                    if progress is not None:
                        progress.show(episodes, {"reward": reward_sum / max(len(played), 1)})
    finally:
        if progress is not None:
            progress.close()
    return played


def _device(device: str) -> Any:
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        target = torch.device(device)
    except RuntimeError as error:
        raise DeviceError(f"device {device!r} is not a torch device: {error}") from None
    backend = getattr(torch, target.type, None)  # torch.cuda, torch.xpu, torch.mps, ...
    if backend is not None and hasattr(backend, "is_available") and not backend.is_available():
        raise DeviceError(f"device {device!r}: this machine has no {target.type} device")
    count = getattr(backend, "device_count", None)
    if target.index is not None and callable(count) and target.index >= count():
        raise DeviceError(f"device {device!r}: this machine has {count()} {target.type} device(s)")
    return target
