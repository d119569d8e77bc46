"""Playing batches of episodes with one policy or several, in single- and multi-agent text envs.

:class:`RolloutEngine` drives any env whose observations are text and whose actions are ``str``: a
Gymnasium env (one agent), a PettingZoo AEC env (agents take turns) or Parallel env (live agents
act together), local or remote (``grpc://`` ids; the remote clients are such envs themselves).

Policies: one generator (the single policy ``"policy"``), or named :class:`~mrlm.train.rollout.policies.Policy`
records with ``agent_policies`` mapping each agent to one of them: one shared policy for every agent
(roles come from each agent's system prompt and observations), one policy per agent, or any mix. Each
agent keeps its own conversation in its policy's chat template; its trajectory's mask covers only
its own replies. All the prompts one policy must answer in a round go into one generate call.

Groups (``collect(seeds, group_size)``), by ``joint`` mode:

* ``"align"``: ``group_size`` episodes per seed, each reset with the seed; sample ``j`` of every agent
  plays joint episode ``j``. Each agent's ``group_size`` rows of one seed form a group.
* ``"cross"``: per seed and round, each agent samples ``group_size`` replies from the same state and
  every combination of the agents' samples is played (by resetting with the seed and replaying the
  earlier rounds); each sample is credited with the mean return of the joint actions it is part of.
  Each agent's samples of one round form a group. See :mod:`mrlm.train.rollout.cross`.

Rows come group-contiguous and seed-major: for each seed, its groups (agents in the env's order; in
``cross`` rounds first), each ``group_size`` rows, member ``j`` at index ``j``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from mrlm.train.generation.base import Generator, SamplingParams
from mrlm.train.loop.errors import CheckpointError
from mrlm.train.rollout.context import Episode, Rollout, Task
from mrlm.train.rollout.cross import play_cross
from mrlm.train.rollout.envs import EnvFactory, EnvKind, env_factory, kind_of
from mrlm.train.rollout.errors import EnvFailedError, describe_seeds, raised_by_env
from mrlm.train.rollout.play_aec import play_aec
from mrlm.train.rollout.play_rounds import play_rounds
from mrlm.train.rollout.policies import DEFAULT_POLICY, AgentPolicies, Policy, PolicyTable
from mrlm.train.rollout.prompts import SystemPrompt
from mrlm.train.rollout.rounds import Agent, round_env
from mrlm.train.rollout.trajectory import Trajectory

#: Why a run without an opponent pool refuses a checkpoint saved with one (its engine's state is an
#: opponent rollout's, :mod:`mrlm.train.self_play.opponents`).
WITH_OPPONENT_POOL = (
    "the checkpoint holds an opponent pool: it was saved by a run with --opponent-pool, this run "
    "has none; resume it with the same --opponent-pool"
)

JointMode = Literal["align", "cross"]


class RolloutEngine:
    """Collects groups of episodes of a text env with one or several policies.

    Args:
        env: an env id (``mrlm.envs``, remote ``grpc://``, or gymnasium registry), or a zero-argument
            factory building one env. The engine keeps a pool of envs, reused across calls.
        generator: the generator of the single policy, or the policies by name.
        tokenizer: the single policy's tokenizer (with a chat template); with named policies, the
            tokenizer of those that give none.
        sampling: sampling parameters of every reply (of the policies that give none). With
            ``sampling.seed`` set, each generate call gets a seed derived from it, the call count of
            :meth:`collect`, the round and the policy, so an engine built the same way collects the
            same trajectories, and two calls differ.
        agent_policies: the policy of each agent, a mapping or a callable (agent ``None`` in
            single-agent envs); None: the only policy, or the policy named like the agent.
        kind: ``"aec"`` or ``"parallel"`` for a multi-agent id (its default kind when None); with a
            factory, the kind its envs must be.
        joint: ``"align"`` or ``"cross"`` (see the module docstring).
        max_joint_actions: in ``cross`` mode, the most joint actions (``group_size ** agents``) a round
            may have; more raise ValueError.
        system_prompt: ``system_prompt(agent, reset_info)``, the system message opening each agent's
            conversation (it returns None for none); by default (None) the env's ``system_prompt``
            info, then ``You are <agent>.`` for a named agent, unless its policy was trained without
            that line (``Policy.names_agent`` False: each agent's own model).
        env_kwargs: keyword arguments for the env id (not allowed with a factory).
        env_id: the id recorded in trajectories; defaults to the id, else the env's ``spec.id`` or class name.
        max_turns: replies per agent after which the engine truncates the episode (``"max_turns"``).
        max_prompt_tokens: an episode in which an agent's next prompt would be longer ends truncated
            (``"prompt_too_long"``) instead of reaching the model; None for no limit.
        step_workers: threads stepping, resetting and replaying envs concurrently (> 1 helps remote
            envs); in ``cross`` mode also the number of spare envs replaying joint actions.
    """

    def __init__(
        self,
        env: str | EnvFactory,
        generator: Generator | Mapping[str, Policy],
        tokenizer: Any = None,
        sampling: SamplingParams | None = None,
        *,
        agent_policies: AgentPolicies | None = None,
        kind: EnvKind | None = None,
        joint: JointMode = "align",
        max_joint_actions: int = 256,
        system_prompt: SystemPrompt | None = None,
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
        if joint not in ("align", "cross"):
            raise ValueError(f"joint must be 'align' or 'cross', got {joint!r}")
        if max_joint_actions < 1:
            raise ValueError(f"max_joint_actions must be at least 1, got {max_joint_actions}")
        if kind not in (None, "gymnasium", "aec", "parallel"):
            raise ValueError(f"kind must be 'gymnasium', 'aec', 'parallel' or None, got {kind!r}")
        self.policies = PolicyTable(_policies(generator, tokenizer), sampling, agent_policies)
        self._make_env = env_factory(env, env_kwargs, kind)
        self.kind = kind
        self.env_id = env_id if env_id is not None else (env if isinstance(env, str) else None)
        self.joint: JointMode = joint
        self.max_joint_actions = max_joint_actions
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.max_prompt_tokens = max_prompt_tokens
        self.step_workers = step_workers
        self._envs: list[Any] = []
        self._calls = 0
        self._next_group = 0
        self._next_episode = 0

    # The single policy, as engines built with one generator expose it --------------------------------

    @property
    def generator(self) -> Generator:
        return self.policies[self._single()].generator

    @generator.setter
    def generator(self, generator: Generator) -> None:
        self.policies.replace(self._single(), generator=generator)

    @property
    def tokenizer(self) -> Any:
        return self.policies[self._single()].tokenizer

    @property
    def sampling(self) -> SamplingParams:
        return self.policies.sampling(self._single())

    # ----------------------------------------------------------------------------------------------

    def collect(self, seeds: Sequence[int], group_size: int = 1) -> list[Trajectory]:
        """Play ``group_size`` samples per seed and agent, each episode reset with its seed.

        All episodes run together: each round batches the prompts of every agent awaiting a reply
        into one ``generate`` call per policy, then steps each env.

        Returns:
            The rows, group-contiguous and seed-major (see the module docstring). With one agent and
            ``joint="align"``, trajectory ``i * group_size + g`` is member ``g`` of the group of ``seeds[i]``.

        Raises:
            EnvFailedError: the env's own code raised in ``reset`` or ``step`` (the message names
                the env, the seeds and the env's error, which is its ``__cause__``).
        """
        if group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {group_size}")
        seeds = [int(seed) for seed in seeds]
        rollout = Rollout(
            table=self.policies,
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            max_prompt_tokens=self.max_prompt_tokens,
            step_workers=self.step_workers,
            call=self._calls,
        )
        self._calls += 1
        try:
            if self.joint == "cross":
                blocks = self._cross(rollout, seeds, group_size)
            else:
                blocks = self._align(rollout, seeds, group_size)
        except Exception as error:
            if not raised_by_env(error):
                raise
            env = f"env {self.env_id!r}" if self.env_id else "the env the factory made"
            raise EnvFailedError(
                f"{env} raised during the episodes of seeds {describe_seeds(seeds)}: "
                f"{type(error).__name__}: {error}"
            ) from error
        rows: list[Trajectory] = []
        for block in blocks:
            for row in block:
                row.group = self._next_group
            self._next_group += 1
            rows += block
        return rows

    def state_dict(self) -> dict[str, int]:
        """The counters that make successive :meth:`collect` calls differ, for checkpoints."""
        return {"calls": self._calls, "next_group": self._next_group, "next_episode": self._next_episode}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Continue from :meth:`state_dict`: the next call collects what it would have collected.

        Raises:
            CheckpointError: ``state`` is an opponent rollout's (:mod:`mrlm.train.self_play.opponents`),
                saved by a run with ``--opponent-pool``; nothing is loaded.
        """
        if "calls" not in state and "engine" in state:
            raise CheckpointError(WITH_OPPONENT_POOL)
        self._calls = int(state["calls"])
        self._next_group = int(state["next_group"])
        self._next_episode = int(state.get("next_episode", 0))  # absent from older checkpoints

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

    def _align(self, rollout: Rollout, seeds: list[int], group_size: int) -> list[list[Trajectory]]:
        tasks = [
            Task(seed, self._next_episode + i * group_size + j, j)
            for i, seed in enumerate(seeds)
            for j in range(group_size)
        ]
        self._next_episode += len(tasks)
        envs = self._pool(len(tasks))
        if kind_of(envs[0]) == "aec":
            episodes = play_aec(rollout, envs, tasks, self.env_id)
        else:
            episodes = play_rounds(rollout, [round_env(env, self.env_id) for env in envs], tasks)
        blocks = []
        for i in range(len(seeds)):
            group = episodes[i * group_size : (i + 1) * group_size]
            for agent in _agents(group):
                blocks.append([self._row(e, agent) for e in group if agent in e.seats])
        return blocks

    def _cross(self, rollout: Rollout, seeds: list[int], group_size: int) -> list[list[Trajectory]]:
        tasks = [Task(seed, self._next_episode + i, 0) for i, seed in enumerate(seeds)]
        self._next_episode += len(tasks)
        envs = [round_env(env, self.env_id) for env in self._pool(len(tasks) + self.step_workers)]
        lines = play_cross(
            rollout, envs[: len(tasks)], envs[len(tasks) :], tasks, group_size, self.max_joint_actions
        )
        return [block for line in lines for block in line]

    def _row(self, episode: Episode, agent: Agent) -> Trajectory:
        return episode.seats[agent].trajectory(episode.env_id, -1)

    def _pool(self, size: int) -> list[Any]:
        while len(self._envs) < size:
            env = self._make_env()
            found = kind_of(env)
            if self.kind is not None and found != self.kind:
                env.close()
                raise TypeError(
                    f"the env factory built a {found} env; the engine was asked for {self.kind!r}"
                )
            self._envs.append(env)
        return self._envs[:size]

    def _single(self) -> str:
        names = self.policies.names()
        if len(names) == 1:
            return names[0]
        if DEFAULT_POLICY in names:
            return DEFAULT_POLICY
        raise AttributeError(f"the engine has several policies {names}: use engine.policies[name]")


def _policies(generator: Generator | Mapping[str, Policy], tokenizer: Any) -> dict[str, Policy]:
    if isinstance(generator, Mapping):
        return {
            name: policy if policy.tokenizer is not None else dataclasses.replace(policy, tokenizer=tokenizer)
            for name, policy in generator.items()
        }
    if tokenizer is None:
        raise ValueError("a rollout engine with one generator needs its tokenizer")
    return {DEFAULT_POLICY: Policy(generator, tokenizer)}


def _agents(episodes: Sequence[Episode]) -> list[Agent]:
    """The agents of a group's episodes, in the order the env listed them."""
    seen: dict[Agent, None] = {}
    for episode in episodes:
        seen.update(dict.fromkeys(episode.seats))
    return list(seen)
