"""The step the MAGRPO family shares: several LLM agents trained together on a multi-agent text env.

MAGRPO, MAREINFORCE, MARLOO and MAReMax (:mod:`~mrlm.train.algorithms.magrpo` and its siblings)
are this step with a different baseline. One step:

1. **rollout**: ``prompts_per_step`` tasks (env seeds), each played ``group_size`` times by every
   agent of a PettingZoo env (Parallel or AEC, local or remote). ``joint="align"``: sample ``j`` of
   every agent plays joint episode ``j``; ``joint="cross"``: every combination of the agents'
   samples is played (see :mod:`mrlm.train.rollout.cross`). Each agent's side of an episode is one
   row, played by its policy: one model shared by every agent (``policies="shared"``, roles from
   the agents' system prompts), one model per agent (``policies="per_agent"``), or one frozen base
   model with one LoRA adapter per agent (``policies="lora"``, :mod:`mrlm.train.adapters`: each
   agent a policy of its own for about one model's memory);
2. **credit**: a row's reward ``r`` is what the env paid its agent over the episode
   (``credit="agent"``: competitive or mixed games), or the team's, the mean over the episode's
   agents (``credit="team"``: cooperation; see :func:`~mrlm.train.ops.credit.team_rewards`); with
   ``dynamic_sampling``, groups whose rewards are all equal are dropped and more tasks sampled (DAPO);
3. **advantages**: within each group (one agent's ``G`` rows of one task), with the variant's
   baseline ``b``::

       A_i = (r_i - b_i) / (std_group(r) + eps)      (advantage_scaling="group")

   MAGRPO ``b = mean(r)``, MAREINFORCE ``b = 0``, MARLOO ``b_i = mean_{j != i} r_j``, MAReMax
   ``b = max(r)`` (:func:`~mrlm.train.ops.credit.grouped_advantages`). With
   ``group_by="agent_turn"`` (AT-GRPO) the same per turn: the ``k``-th reply of each row against
   the ``k``-th replies of its group, on the rewards of that turn, each reply's tokens getting its
   turn's advantage (:func:`~mrlm.train.ops.credit.turn_advantages`);
4. **update**: every policy on its own agents' rows, with GRPO's loss (the clipped ratio
   ``pi/pi_old`` per token, optional k3 KL to the policy's frozen initial weights,
   :func:`~mrlm.train.algorithms.grpo.grpo_loss`), ``num_iterations`` passes over the batch; each
   pass's micro-batches run every policy's loss together, and one optimizer step updates every
   policy (:func:`~mrlm.train.algorithms.onpolicy.update_parts`);
5. **logging**: :class:`StepStats` and the rollout's metrics, per agent (``agent/<agent>/reward``)
   and per policy (``policy/<name>/clip_fraction``, ``grad_norm/<name>``).

With one iteration on fresh samples the ratio is 1 and the clipped loss has the gradient of
``-A * log pi(y)`` (CoMLRL's loss up to the per-sequence mean); more passes, clipping and the KL go
beyond it.

Self-play (shared policy, ``credit="agent"``): with ``opponent_pool`` the policy plays one seat per
task against a frozen past snapshot of itself and trains on its own rows only; with ``eval_every``
it logs its win rates against its initial weights and a rule-based opponent
(:mod:`mrlm.train.self_play.training`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch

from mrlm.train.adapters import AdapterSetupError, agent_adapters, base_references
from mrlm.train.algorithms.grpo import grpo_loss
from mrlm.train.algorithms.onpolicy import (
    LossFn,
    Normalisers,
    Part,
    Rows,
    TaskSeeds,
    check_rollout_settings,
    parse_env_kwargs,
    rollout_metrics,
    run_sampling,
    run_task_seeds,
    update_parts,
)
from mrlm.train.config_io import check_values
from mrlm.train.generation import HFGenerator
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.config import check_no_accumulation
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.ops.advantages import StdScaling
from mrlm.train.ops.credit import (
    Credit,
    Estimator,
    grouped_advantages,
    split_like,
    team_rewards,
    token_advantages,
    turn_advantages,
)
from mrlm.train.ops.policy_loss import check_clip_range
from mrlm.train.policy import ModelConfig, check_agent_models, load_policy
from mrlm.train.rollout import Policy, RolloutEngine, Trajectory
from mrlm.train.rollout.batch import RolloutBatch, collate, reward_tensor
from mrlm.train.rollout.cross import too_many_joint_actions
from mrlm.train.rollout.envs import EnvFactory, check_env_id, env_factory, started_env
from mrlm.train.self_play import DEBATE_SLOGAN
from mrlm.train.self_play.opponents import OpponentRollout
from mrlm.train.self_play.training import SelfPlay, frozen_models
from mrlm.train.self_play.training import check_settings as check_self_play
from mrlm.train.setting_checks import check_counts, check_non_negative
from mrlm.train.task_seeds import training_seed_base
from mrlm.train.value import causal_lm

#: The single policy's name when every agent shares one model.
SHARED = "policy"
#: The prefix of each policy's frozen reference in the session (``reference_<policy>``).
REFERENCE_PREFIX = "reference_"
#: The most joint actions (``group_size ** agents``) a round of ``joint="cross"`` may play in training.
MAX_JOINT_ACTIONS = 256

Sharing = Literal["shared", "per_agent", "lora"]


class MultiAgentSetupError(ValueError):
    """Settings that do not fit the env: an agent it does not have, env_kwargs with a factory, an
    agent that never acts, more joint actions per ``cross`` round than :data:`MAX_JOINT_ACTIONS`."""


class SingleAgentEnvError(MultiAgentSetupError, TypeError):
    """The env has no agents (a Gymnasium env): train it with GRPO or PPO."""


@dataclass
class MultiAgentConfig:
    """Everything one run of the MAGRPO family needs. Flags on the command line, or a YAML file."""

    env_id: str = "mrlm/TeamSum-v0"
    """Multi-agent environment id (``mrlm-envs list``), local or remote (``grpc://``)."""
    env_kwargs: str = "{}"
    """The env's keyword arguments as a JSON object, such as '{"num_agents": 3}'."""
    kind: Literal["parallel", "aec"] | None = None
    """The env's API: "parallel" (agents act together) or "aec" (in turns); None: the id's default."""
    policies: Sharing = "shared"
    """One model for every agent ("shared"), one model per agent ("per_agent"), or one frozen base
    with one LoRA adapter per agent ("lora": model.lora_* set the adapters, lora_r 0 meaning rank 8)."""
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="tiny"))
    """The policy (shared), every agent's starting model (per_agent) unless agent_models names one,
    or the base every agent's adapter adapts (lora)."""
    agent_models: dict[str, str] = field(default_factory=dict)
    """With per_agent: a model name or path for some agents, by agent name (others start from model); on the command line, names and models in turn: --agent-models first ./a second org/b."""

    group_size: int = 4
    """Samples per agent and task (compared with each other)."""
    prompts_per_step: int = 4
    """Tasks per optimizer step and process."""
    joint: Literal["align", "cross"] = "align"
    """Sample j of every agent plays episode j ("align"), or every combination is played ("cross")."""
    credit: Credit = "team"
    """Train each row on the team's reward (mean over the episode's agents) or its agent's own."""
    advantage_scaling: StdScaling = "group"
    """Divide advantages by the std of the group's rewards, of the batch's, or not at all."""
    group_by: Literal["agent", "agent_turn"] = "agent"
    """Compare each agent's whole episodes ("agent"), or each turn with the same turn of the agent's
    other samples, on the reward of that turn ("agent_turn", AT-GRPO; multi-turn envs, joint align)."""
    max_new_tokens: int = 64
    """Longest reply, in tokens."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    max_turns: int = 1
    """Replies per agent after which the rollout stops (multi-turn envs)."""
    ignore_stop: bool = False
    """Never stop a reply at a stop token: every reply has exactly max_new_tokens tokens (benchmarks)."""

    clip_low: float = 0.2
    """Lower clip of the importance ratio: 1 - clip_low."""
    clip_high: float = 0.2
    """Upper clip of the importance ratio: 1 + clip_high."""
    ratio_level: Literal["token", "sequence"] = "token"
    """Importance ratio per token, or per sequence (GSPO)."""
    aggregation: Literal["sequence_mean", "token_mean", "constant"] = "sequence_mean"
    """Average of token losses: per sequence, per token (DAPO), or a constant normaliser (Dr. GRPO)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL to each policy's frozen initial weights; 0 loads no reference."""
    num_iterations: int = 1
    """Optimisation passes over each batch of rollouts."""
    micro_batch_size: int = 8
    """Rows of one policy per forward/backward pass."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards are all equal (they teach nothing) and sample more tasks (DAPO)."""
    max_sampling_rounds: int = 4
    """With dynamic_sampling: rollout rounds per step before training on what there is."""

    opponent_pool: int = 0
    """Self-play against past snapshots: the policy plays one seat per task against one of its last
    opponent_pool snapshots (the initial one always kept), learning from its own seat only; 0: it plays
    every seat. Needs policies='shared' and credit='agent' (see mrlm.train.self_play.training)."""
    snapshot_every: int = 10
    """With opponent_pool: steps between snapshots of the policy added to the pool."""
    eval_every: int = 0
    """Log win_rate/initial and win_rate/rule (the policy against its initial weights and against
    rule_reply, from every seat, greedy) every this many steps; 0: never."""
    eval_tasks: int = 8
    """With eval_every: the fixed tasks (env seeds) of each win-rate evaluation."""
    rule_reply: str = DEBATE_SLOGAN
    """With eval_every: the reply the rule-based opponent gives to everything."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/magrpo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=1e-4))
    """Optimizer and learning-rate schedule of every policy."""
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    """DDP/FSDP and mixed precision."""

    #: Samples per group below which the advantages have nothing to compare (1 for a critic's baseline).
    min_group_size: ClassVar[int] = 2

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if self.group_size < self.min_group_size:
            raise ValueError(
                f"group_size must be at least {self.min_group_size} (advantages compare samples), "
                f"got {self.group_size}"
            )
        check_counts(
            prompts_per_step=self.prompts_per_step,
            micro_batch_size=self.micro_batch_size,
            num_iterations=self.num_iterations,
            max_sampling_rounds=self.max_sampling_rounds,
        )
        check_rollout_settings(self)
        check_no_accumulation(
            self.dist, "each policy's rows are split into micro-batches of micro_batch_size"
        )
        check_clip_range(self.clip_low, self.clip_high)
        check_non_negative(kl_coef=self.kl_coef)
        if self.policies not in ("shared", "per_agent", "lora"):
            raise ValueError(f"policies must be 'shared', 'per_agent' or 'lora', got {self.policies!r}")
        if self.policies == "lora" and self.dist.strategy == "fsdp":
            raise AdapterSetupError(
                "policies='lora' does not run under FSDP: it would shard each agent's adapter but not the "
                "base they share; use dist.strategy='ddp' (the adapters are small, the frozen base is not "
                "reduced), or policies='per_agent'"
            )
        if self.agent_models and self.policies != "per_agent":
            raise ValueError("agent_models gives each agent its own model: it needs policies='per_agent'")
        check_agent_models(self.agent_models)
        if self.joint == "cross" and self.credit == "team":
            raise ValueError(
                "joint='cross' credits each sample with its own agent's rewards over the joint actions it "
                "is part of; use credit='agent' (the same thing in an env that pays every agent the team's reward)"
            )
        if self.group_by == "agent_turn" and self.joint != "align":
            raise ValueError(
                "group_by='agent_turn' compares the turns of aligned episodes: it needs joint='align'"
            )
        parse_env_kwargs(self.env_kwargs)
        check_self_play(self)


@dataclass
class StepStats:
    """What one step reports (also keys of metrics.jsonl)."""

    reward: float
    """Mean credited reward of the rows trained on."""
    sampled_reward: float
    """Mean credited reward of every row sampled this step, including groups dynamic sampling dropped."""
    episode_success: float
    """Share of the sampled joint episodes in which every agent's total reward is positive."""
    loss: float
    kl: float
    """Mean k3 estimate of KL(policy || reference) on the trained tokens (0 when kl_coef is 0)."""
    clip_fraction: float
    approx_kl: float
    """Mean k3 estimate of KL(sampling policy || updated policy)."""
    groups_kept: float
    """Share of sampled groups trained on (below 1 only with dynamic sampling)."""
    grad_norm: float
    """Gradient norm of the first policy before clipping (``grad_norm/<name>`` for the others)."""
    lr: float
    tokens: float
    """Trained tokens of the step, over all processes and policies."""
    tokens_per_s: float
    step_s: float
    rollout_s: float


def train(config: MultiAgentConfig, estimator: Estimator, *, env: EnvFactory | None = None) -> Path:
    """Run the step with ``estimator``'s baseline until ``run.max_steps``; return the final directory.

    ``env``: a zero-argument factory of the env to play (a
    :class:`~mrlm.envs.dataset_task.DatasetTaskEnv` built from records and functions, say) instead
    of ``config.env_id``, which then only names it in metrics.

    The final directory holds the shared policy, or one directory per agent (``final/<agent>``),
    each with ``save_pretrained`` weights and its tokenizer; with ``policies="lora"`` each holds the
    agent's peft adapter (``PeftModel.from_pretrained(base, final/<agent>)`` loads it on the base).
    """
    check_output_dir(config.run.output_dir)  # before the models load, which may take minutes
    make_env = run_env(config, env)
    agents = env_agents(make_env, config.env_id, training_seed_base(config.run.seed))
    check_joint_actions(config.joint, config.group_size, len(agents))
    models, tokenizers = load_policies(config, agents)
    # Each policy's reference is its initial weights, frozen; the session places (and shards) them.
    # With adapters that is the shared base with the adapters off: no second copy.
    references: dict[str, Any] = {}
    if config.kl_coef > 0:
        references = (
            base_references(models) if config.policies == "lora" else load_policies(config, agents)[0]
        )
    frozen = {REFERENCE_PREFIX + name: model for name, model in references.items()}
    frozen.update(frozen_models(config))  # self-play's opponent and initial policy, if any
    with TrainingSession.for_config(config, models, frozen=frozen) as session:
        play = SelfPlay(config, session, tokenizers[session.model_names[0]], make_env, agents)
        engine = play.rollout or rollout_engine(config, session, tokenizers, make_env)
        seeds = run_task_seeds(config, session)
        state = session.restore()
        if state:
            seeds.cursor = int(state["seed_cursor"])
            engine.load_state_dict(state["engine"])
            play.load_state_dict(state.get("self_play", {}))
        with engine:
            while session.step < config.run.max_steps:
                with play.opponent() as opponent:
                    stats, extra = train_step(session, engine, seeds, config, tokenizers, estimator)
                session.log({**dataclasses.asdict(stats), **extra, **opponent, **play.evaluate()})
                session.maybe_save(
                    {
                        "seed_cursor": seeds.cursor,
                        "engine": engine.state_dict(),
                        "self_play": play.state_dict(),
                    }
                )
        tokenizer = tokenizers[SHARED] if config.policies == "shared" else tokenizers
        # final/<agent>/ for every agent with a model of its own, even an env's only agent.
        unnamed = () if config.policies == "shared" else list(tokenizers)
        return session.save_final(tokenizer, by_name=config.policies != "shared", unnamed_openings=unnamed)


def run_env(config: MultiAgentConfig, env: EnvFactory | None) -> EnvFactory:
    """The factory of the env a run plays: ``env`` when given (``env_kwargs`` must then be empty),
    else ``config.env_id`` with its ``env_kwargs`` and ``kind``.

    Raises:
        UnknownEnvError: an id no env answers to; the remote errors: a server that is not there.
    """
    if env is None:
        check_env_id(config.env_id)  # a server that is not there says so itself, not as an env that failed
        return env_factory(config.env_id, parse_env_kwargs(config.env_kwargs), config.kind)
    if parse_env_kwargs(config.env_kwargs):
        raise MultiAgentSetupError("env_kwargs go with env_id; an env factory takes none")
    return env


def env_agents(make_env: EnvFactory, label: str, seed: int) -> list[str]:
    """The agents of the env ``make_env`` builds (``possible_agents``), from one env built, reset
    with ``seed`` and closed (:func:`~mrlm.train.rollout.envs.started_env`): an env that cannot
    start fails before any model loads. ``label`` names the env in the messages.

    Raises:
        EnvFailedError: the env raised when built or reset.
        SingleAgentEnvError: a single-agent env (train it with GRPO or PPO).
    """
    with started_env(make_env, label, seed) as env:
        agents = getattr(env, "possible_agents", None)
        if not agents:
            raise SingleAgentEnvError(
                f"{type(getattr(env, 'unwrapped', env)).__name__} has no agents: the multi-agent trainers need a PettingZoo env "
                "(use grpo or ppo for a single-agent env)"
            )
        return [str(agent) for agent in agents]


def check_joint_actions(joint: str, group_size: int, num_agents: int) -> None:
    """Refuse, before any model loads, a ``joint="cross"`` run whose rounds of ``num_agents`` agents
    with ``group_size`` samples each would play more than :data:`MAX_JOINT_ACTIONS` joint actions.

    Raises:
        MultiAgentSetupError: too many joint actions; the message names the largest group size.
    """
    problem = too_many_joint_actions(group_size, num_agents, MAX_JOINT_ACTIONS) if joint == "cross" else None
    if problem is not None:
        raise MultiAgentSetupError(f"{problem}; lower group_size or use joint='align'")


def load_policies(config: MultiAgentConfig, agents: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The models to train and their tokenizers, by policy name: ``{"policy": ...}`` when shared,
    else one per agent (``agent_models`` or ``model``; with ``"lora"``, each agent's
    :class:`~mrlm.train.adapters.AgentAdapter` of one shared base, adapters seeded from ``run.seed``).

    Raises:
        MultiAgentSetupError: ``agent_models`` names an agent the env does not have.
        NoChatTemplateError: a model whose tokenizer has no chat template.
    """
    if config.policies == "shared":
        model, tokenizer = load_policy(config.model, chat=True, seed=config.run.seed)
        return {SHARED: model}, {SHARED: tokenizer}
    if config.policies == "lora":
        views, tokenizer = agent_adapters(config.model, agents, seed=config.run.seed)
        return dict(views), dict.fromkeys(agents, tokenizer)
    unknown = sorted(set(config.agent_models) - set(agents))
    if unknown:
        raise MultiAgentSetupError(
            f"agent_models names agents {unknown} that the env does not have; its agents are {list(agents)}"
        )
    models: dict[str, Any] = {}
    tokenizers: dict[str, Any] = {}
    for agent in agents:
        name = config.agent_models.get(agent, config.model.name_or_path)
        models[agent], tokenizers[agent] = load_policy(
            dataclasses.replace(config.model, name_or_path=name), chat=True, seed=config.run.seed
        )
    return models, tokenizers


def rollout_engine(
    config: MultiAgentConfig, session: TrainingSession, tokenizers: dict[str, Any], make_env: EnvFactory
) -> RolloutEngine:
    """The engine playing every agent with its policy's model as the session holds it; sampling
    seeded per process, reproducible from ``run.seed``."""
    sampling = run_sampling(config, session)
    policies = {
        # Each agent's own model (per_agent, lora) opens its conversations without naming it.
        name: Policy(
            HFGenerator(causal_lm(session.unwrapped(name)), tokenizer),
            tokenizer,
            names_agent=config.policies == "shared",
        )
        for name, tokenizer in tokenizers.items()
    }
    return RolloutEngine(
        make_env,
        policies,
        sampling=sampling,
        # Shared: every agent plays the one policy; otherwise each plays the policy named like it.
        agent_policies=(lambda agent: SHARED) if config.policies == "shared" else None,
        joint=config.joint,
        max_joint_actions=MAX_JOINT_ACTIONS,
        env_id=config.env_id,
        max_turns=config.max_turns,
    )


@contextlib.contextmanager
def generation(session: TrainingSession) -> Iterator[None]:
    """Every trained policy ready to sample (under FSDP, all gathered together)."""
    with contextlib.ExitStack() as stack:
        for name in session.model_names:
            stack.enter_context(session.generation_mode(name))
        yield


def credited_rewards(rows: Sequence[Trajectory], credit: Credit) -> torch.Tensor:
    """``[B]`` the reward each row trains on (see the module docstring, step 2)."""
    rewards = reward_tensor(rows)
    if credit == "agent":
        return rewards
    # A row without an episode id (a single-agent env's) is a team of its own.
    episodes = [row.episode if row.episode is not None else -1 - i for i, row in enumerate(rows)]
    return team_rewards(rewards, torch.tensor(episodes))


def credited_turn_rewards(rows: Sequence[Trajectory], credit: Credit) -> list[list[float]]:
    """The reward of each reply of each row: its agent's own, or the mean over the joint episode's
    agents of their rewards for the same turn (``credit="team"``)."""
    own = [list(row.turn_rewards) for row in rows]
    if credit == "agent":
        return own
    flat = [reward for rewards in own for reward in rewards]
    keys = [
        (row.episode if row.episode is not None else -1 - i, k)
        for i, (row, rewards) in enumerate(zip(rows, own, strict=True))
        for k in range(len(rewards))
    ]
    ids = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    team = team_rewards(torch.tensor(flat), torch.tensor([ids[key] for key in keys])).tolist()
    return split_like(team, own)


@dataclass
class Collected:
    """What one step's rollout gives the update: rows (group-contiguous) with their credit."""

    rows: list[Trajectory]
    rewards: torch.Tensor
    """``[B]`` each row's credited reward."""
    turn_rewards: list[list[float]]
    """Each row's credited reward of each reply."""
    groups_kept: float
    """Share of the sampled groups kept (below 1 only with dynamic sampling)."""
    sampled_reward: float
    """Mean credited reward of every sampled row."""
    episode_success: float
    """Share of the sampled joint episodes every agent of which earned a positive reward."""


def collect_rows(
    engine: RolloutEngine | OpponentRollout, seeds: TaskSeeds, config: MultiAgentConfig
) -> Collected:
    """Rollout and credit: ``prompts_per_step`` tasks; with dynamic sampling, groups whose credited
    rewards are all equal are dropped and more tasks sampled until every agent has
    ``prompts_per_step`` groups with signal (or ``max_sampling_rounds`` rollouts were made).

    Credit is computed on each rollout as a whole, before any group is dropped, so a row keeps the
    team's reward of its episode whichever of its partners' groups are kept. An agent left without
    any group trains on its groups of the last rollout (zero advantages), so every policy has rows.
    """
    kept: list[int] = []  # indices into every sampled row
    every: list[Trajectory] = []
    credits: list[float] = []
    turn_credits: list[list[float]] = []
    per_agent: dict[str | None, int] = {}
    sampled_groups = 0
    episodes: dict[int, bool] = {}
    last: list[int] = []
    for _ in range(config.max_sampling_rounds if config.dynamic_sampling else 1):
        needed = config.prompts_per_step - min(per_agent.values(), default=0)
        rows = engine.collect(seeds.take(needed), config.group_size)
        offset = len(every)
        every += rows
        credits += credited_rewards(rows, config.credit).tolist()
        turn_credits += credited_turn_rewards(rows, config.credit)
        for i, row in enumerate(rows):
            episode = row.episode if row.episode is not None else -1 - offset - i
            episodes[episode] = episodes.get(episode, True) and row.total_reward > 0
        last = list(range(offset, len(every)))
        for _, members in itertools.groupby(last, key=lambda i: every[i].group):
            group = list(members)
            agent = every[group[0]].agent
            per_agent.setdefault(agent, 0)
            sampled_groups += 1
            values = [credits[i] for i in group]
            useful = max(values) - min(values) > 1e-6
            if not config.dynamic_sampling or (useful and per_agent[agent] < config.prompts_per_step):
                kept += group
                per_agent[agent] += 1
        if min(per_agent.values(), default=0) >= config.prompts_per_step:
            break
    kept_groups = sum(per_agent.values())
    lacking = {agent for agent, count in per_agent.items() if count == 0}
    kept += [i for i in last if every[i].agent in lacking]
    return Collected(
        rows=[every[i] for i in kept],
        rewards=torch.tensor([credits[i] for i in kept], dtype=torch.float32),
        turn_rewards=[turn_credits[i] for i in kept],
        groups_kept=kept_groups / max(sampled_groups, 1),
        sampled_reward=sum(credits) / max(len(credits), 1),
        episode_success=sum(episodes.values()) / max(len(episodes), 1),
    )


def train_step(
    session: TrainingSession,
    engine: RolloutEngine | OpponentRollout,
    seeds: TaskSeeds,
    config: MultiAgentConfig,
    tokenizers: dict[str, Any],
    estimator: Estimator,
) -> tuple[StepStats, dict[str, float]]:
    """One step (see the module docstring); returns its stats and the rollout's metrics."""
    started = time.perf_counter()
    # 1-2. rollout and credit
    with generation(session):
        collected = collect_rows(engine, seeds, config)
    rollout_s = time.perf_counter() - started
    rows, rewards = collected.rows, collected.rewards
    session.check_finite(rewards, "rewards (as returned by the env)")

    # 3. advantages, within each agent's group (or each agent's turn)
    groups = torch.tensor([row.group for row in rows])
    advantages = grouped_advantages(rewards, groups, estimator, scale=config.advantage_scaling)
    per_turn = (
        turn_advantages(
            collected.turn_rewards,
            [row.group for row in rows],
            estimator,
            scale=config.advantage_scaling,
        )
        if config.group_by == "agent_turn"
        else None
    )

    # 4. update: every policy on its own rows, one optimizer step for all
    parts: dict[str, Part] = {}
    for name in session.model_names:
        own = [i for i, row in enumerate(rows) if row.policy == name]
        if not own:
            raise MultiAgentSetupError(
                f"policy {name!r} played no row this step on process {session.rank}: every agent must act "
                "in every episode"
            )
        batch = collate([rows[i] for i in own], tokenizers[name].pad_token_id, device=session.device)
        own_advantages = (
            advantages[own]
            if per_turn is None
            else token_advantages([per_turn[i] for i in own], batch.turn_spans, int(batch.mask.shape[1]))
        )
        parts[name] = Part(
            batch,
            policy_loss(session, name, batch, own_advantages.to(session.device), config),
            model=session.models[name],
        )
    result = update_parts(
        session, parts, micro_batch_size=config.micro_batch_size, num_iterations=config.num_iterations
    )

    # 5. logging
    metrics = {**rollout_metrics(session, rows), **agent_metrics(session, rows)}
    if len(parts) > 1:
        for name, part in result.parts.items():
            metrics.update({f"policy/{name}/{key}": value for key, value in part.extras.items()})
    elapsed = time.perf_counter() - started
    tokens = sum(part.normalisers.global_tokens for part in result.parts.values())
    stats = StepStats(
        reward=session.all_reduce_mean(float(rewards.mean())),
        sampled_reward=session.all_reduce_mean(collected.sampled_reward),
        episode_success=session.all_reduce_mean(collected.episode_success),
        loss=result.loss,
        kl=result.extras["kl"],
        clip_fraction=result.extras["clip_fraction"],
        approx_kl=result.extras["approx_kl"],
        groups_kept=session.all_reduce_mean(collected.groups_kept),
        grad_norm=result.grad_norm,
        lr=result.lr,
        tokens=tokens,
        tokens_per_s=tokens / max(elapsed, 1e-9),
        step_s=elapsed,
        rollout_s=rollout_s,
    )
    return stats, {**metrics, **{k: v for k, v in result.optimizer.items() if "/" in k}}


def policy_loss(
    session: TrainingSession,
    name: str,
    batch: RolloutBatch,
    advantages: torch.Tensor,
    config: MultiAgentConfig,
) -> LossFn:
    """The loss of a micro-batch of policy ``name``'s rows: GRPO's, on its own advantages and reference."""
    reference = session.frozen.get(REFERENCE_PREFIX + name)
    ref_logprobs = None
    if reference is not None:
        with torch.no_grad():  # one call on every process: under FSDP the forward is collective
            ref_logprobs = token_logprobs(
                reference, batch.input_ids, batch.attention_mask, batch.mask, config.temperature or 1.0
            )

    def loss_fn(micro: RolloutBatch, rows: Rows, norms: Normalisers) -> tuple[torch.Tensor, dict[str, float]]:
        return grpo_loss(
            session.models[name],
            micro,
            advantages[rows],
            config,
            ref_logprobs=ref_logprobs[rows] if ref_logprobs is not None else None,
            num_sequences=norms.num_sequences,
            num_tokens=norms.num_tokens,
        )

    return loss_fn


def agent_metrics(session: TrainingSession, rows: Sequence[Trajectory]) -> dict[str, float]:
    """``agent/<agent>/reward`` (mean total reward the env paid the agent) and ``agent/<agent>/success``
    (share of its rows with a positive one), over every process's rows. Collective."""
    local: dict[str, list[float]] = {}
    for row in rows:
        totals = local.setdefault(str(row.agent), [0.0, 0.0, 0.0])
        totals[0] += 1
        totals[1] += row.total_reward
        totals[2] += row.total_reward > 0
    merged: dict[str, list[float]] = {}
    for part in session.gather_object(local):
        for agent, (count, reward, positive) in part.items():
            totals = merged.setdefault(agent, [0.0, 0.0, 0.0])
            totals[0] += count
            totals[1] += reward
            totals[2] += positive
    metrics: dict[str, float] = {}
    for agent, (count, reward, positive) in sorted(merged.items()):
        metrics[f"agent/{agent}/reward"] = reward / count
        metrics[f"agent/{agent}/success"] = positive / count
    return metrics
