"""IPPO: independent PPO, every agent its own policy and its own critic, on a multi-agent text env.

De Witt et al. 2020 ("Is independent learning all you need in the StarCraft multi-agent
challenge?"): each agent runs PPO (:mod:`~mrlm.train.algorithms.ppo`) on its own side of the joint
episodes, the other agents being part of its environment. One step:

1. **rollout**: as the MAGRPO family's (:func:`~mrlm.train.algorithms.multi_agent.collect_rows`):
   ``prompts_per_step`` tasks, ``group_size`` joint episodes each (1 by default: the critic is the
   baseline, no group is needed), every agent's side one row played by its own policy
   (``policies="per_agent"``);
2. **rewards on tokens**: each reply's reward on its last token: what the env paid the agent for
   that turn (``credit="agent"``), or the team's, the mean over the episode's agents of their
   rewards for the turn (``credit="team"``); with ``kl_coef > 0`` and ``kl_in="reward"`` every
   model token pays ``beta * (log pi_old(y_t) - log pi_ref(y_t))`` to the agent's frozen initial
   policy;
3. **values** ``V_t`` of the agent's critic at sampling time: a value head on the agent's policy
   (``critic="value_head"``), or a separate value model per agent (``critic="model"``);
4. **advantages** per agent, by GAE over the agent's own tokens (:func:`~mrlm.train.ops.estimators.gae`)::

       delta_t = r_t + gamma * V_t' - V_t          (t' the agent's next token, V = 0 after its last)
       A_t     = delta_t + gamma * lam * A_t'
       R_t     = A_t + V_t                         (the critic's target)

   whitened over the agent's tokens of the whole batch (every process);
5. **update**: ``num_iterations`` epochs of shuffled mini-batches; each agent minimises PPO's loss
   (:func:`~mrlm.train.algorithms.ppo.ppo_loss`: the clipped surrogate with clips ``clip_low`` /
   ``clip_high``, ``vf_coef`` times the clipped value loss, the entropy bonus, and with
   ``kl_in="loss"`` the k3 KL) on its own rows; the agents' mini-batches run together and one
   optimizer step updates every model (:func:`~mrlm.train.algorithms.onpolicy.update_parts`); the
   epochs stop early once a pass's approximate KL exceeds ``target_kl``;
6. **logging**: :data:`METRICS`, per agent as ``policy/<agent>/...`` and ``value/<agent>/...``.

Nothing but the env joins the agents: no shared critic, no shared parameters.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import torch
import tyro

from mrlm.train.algorithms.multi_agent import (
    REFERENCE_PREFIX,
    MultiAgentConfig,
    MultiAgentSetupError,
    Sharing,
    agent_metrics,
    collect_rows,
    env_agents,
    generation,
    load_policies,
    rollout_engine,
    run_env,
)
from mrlm.train.algorithms.onpolicy import (
    LossFn,
    Normalisers,
    Part,
    Rows,
    TaskSeeds,
    rollout_metrics,
    run_task_seeds,
    update_parts,
)
from mrlm.train.algorithms.ppo import (
    check_critic_settings,
    chunked_without_grad,
    epoch_shuffle,
    global_explained_variance,
    global_token_mean,
    global_whiten,
    kl_stop,
    load_critic,
    ppo_loss,
    score,
)
from mrlm.train.config_io import check_values
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.ops.advantages import StdScaling
from mrlm.train.ops.estimators import gae
from mrlm.train.ops.rewards import kl_penalised_rewards, rewards_on_actions
from mrlm.train.rollout import RolloutEngine
from mrlm.train.rollout.batch import RolloutBatch, collate
from mrlm.train.rollout.envs import EnvFactory
from mrlm.train.self_play import DEBATE_SLOGAN
from mrlm.train.setting_checks import check_counts
from mrlm.train.task_seeds import training_seed_base
from mrlm.train.value import PolicyWithValueHead

#: The prefix of each agent's separate critic in the session (``critic_<agent>``).
CRITIC_PREFIX = "critic_"

METRICS = {
    "reward": "mean credited reward of the step's rows",
    "episode_success": "share of the joint episodes in which every agent's total reward is positive",
    "loss": "the mean over passes of the whole objective, every agent's summed",
    "policy/loss": "clipped surrogate, token mean over every agent's tokens",
    "policy/clip_fraction": "share of tokens whose ratio was clipped",
    "policy/approx_kl": "k3 estimate of the KL from the sampling policy to the updated one",
    "value/loss": "clipped value loss, token mean",
    "value/clip_fraction": "share of tokens where the clipped value term was the larger",
    "value/<agent>/mean": "mean value of the agent's critic at sampling time",
    "value/<agent>/explained_variance": "1 - Var(R - V) / Var(R) of the agent's critic, over every process's tokens",
    "returns/<agent>/mean": "mean GAE return of the agent (its critic's target)",
    "kl": "mean per-token KL from the policy to its reference at sampling time, every agent's (k1; 0 without one)",
    "epochs": "passes over the batch run (fewer than num_iterations when target_kl stopped them)",
    "grad_norm": "the first model's gradient norm before clipping (`grad_norm/<name>` for the others)",
    "lr": "the first model's learning rate",
    "tokens": "trained tokens of the step, over all processes and agents",
    "tokens_per_s": "trained tokens per second of the step",
    "step_s": "wall time of the step",
    "rollout_s": "wall time of the rollout",
}
"""What every IPPO step logs, besides each agent's own ``policy/*`` and ``value/*`` keys above
(``policy/<agent>/loss``, ``value/<agent>/loss``, ...), ``agent/<agent>/reward`` and ``agent/<agent>/success``, and the rollout's
metrics (:func:`~mrlm.train.algorithms.onpolicy.rollout_metrics`)."""

# What IPPO does not read: MAGRPO's loss and group settings, and its self-play ones. Changing them
# is a mistake worth naming.
_GROUP_ONLY = (
    "advantage_scaling",
    "group_by",
    "ratio_level",
    "aggregation",
    "dynamic_sampling",
    "max_sampling_rounds",
)
_SELF_PLAY = ("opponent_pool", "snapshot_every", "eval_every", "eval_tasks", "rule_reply")


@dataclass
class IPPOConfig(MultiAgentConfig):
    """Train several LLM agents with independent PPO, each its own policy and critic; flags on the
    command line, or --config FILE (YAML, the same keys)."""

    policies: Sharing = "per_agent"
    """Each agent its own policy (IPPO's independent learners; "shared" is not supported)."""
    group_size: int = 1
    """Joint episodes per task; the batch is prompts_per_step * group_size episodes per process."""
    prompts_per_step: int = 8
    """Tasks per step and process."""

    critic: Literal["value_head", "model"] = "value_head"
    """Each agent's critic: a value head on its policy's trunk (trained by the policy's optimizer),
    or a separate value model with its own optimizer."""
    critic_model: str = ""
    """With critic="model": every critic's backbone, a model name or path; empty starts each from
    its agent's policy."""
    critic_learning_rate: float = 1e-4
    """With critic="model": the value models' learning rate (the rest of optim is shared)."""

    gamma: float = 1.0
    """Discount per model token in GAE."""
    lam: float = 0.95
    """GAE's lambda: 0 is one-step TD, 1 the Monte Carlo return."""
    whiten_advantages: bool = True
    """Shift and scale each agent's advantages to mean 0, std 1 over its tokens of the batch."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    value_clip_range: float = 0.2
    """How far a value may move from its sampling-time value before the clipped term takes over; 0 does not clip."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""
    kl_in: Literal["reward", "loss"] = "reward"
    """With kl_coef > 0: pay the KL in the reward, per token, or add its k3 estimate to the loss."""
    num_iterations: int = 4
    """PPO epochs: passes over each batch of rollouts."""
    mini_batch_size: int = 8
    """Rows of each agent per optimizer step and process."""
    target_kl: float = 0.0
    """Stop a step's epochs once a pass's approximate KL(sampling policy || policy) exceeds this; 0 never stops."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/ippo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=1e-5))
    """Optimizer and learning-rate schedule of every policy (and critic but its rate)."""

    # The MAGRPO family's group and self-play settings, which IPPO does not read: kept out of
    # `mrlm-train ippo --help`, and refused when a file sets them (see __post_init__).
    advantage_scaling: Annotated[StdScaling, tyro.conf.Suppress] = "group"
    group_by: Annotated[Literal["agent", "agent_turn"], tyro.conf.Suppress] = "agent"
    ratio_level: Annotated[Literal["token", "sequence"], tyro.conf.Suppress] = "token"
    aggregation: Annotated[Literal["sequence_mean", "token_mean", "constant"], tyro.conf.Suppress] = (
        "sequence_mean"
    )
    dynamic_sampling: Annotated[bool, tyro.conf.Suppress] = False
    max_sampling_rounds: Annotated[int, tyro.conf.Suppress] = 4
    opponent_pool: Annotated[int, tyro.conf.Suppress] = 0
    snapshot_every: Annotated[int, tyro.conf.Suppress] = 10
    eval_every: Annotated[int, tyro.conf.Suppress] = 0
    eval_tasks: Annotated[int, tyro.conf.Suppress] = 8
    rule_reply: Annotated[str, tyro.conf.Suppress] = DEBATE_SLOGAN

    min_group_size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        # Before MultiAgentConfig's checks, whose messages about these settings do not fit IPPO.
        defaults = {f.name: f.default for f in dataclasses.fields(MultiAgentConfig)}
        changed = [name for name in _GROUP_ONLY if getattr(self, name) != defaults[name]]
        if changed:
            raise ValueError(
                f"{', '.join(changed)} set the MAGRPO family's group advantages and loss; IPPO's "
                "advantages come from each agent's critic (GAE) and its loss is PPO's"
            )
        changed = [name for name in _SELF_PLAY if getattr(self, name) != defaults[name]]
        if changed:
            raise ValueError(
                f"{', '.join(changed)} set the MAGRPO family's self-play; IPPO has no self-play "
                "opponents: each agent plays and trains its own policy"
            )
        super().__post_init__()
        if self.policies != "per_agent":
            raise ValueError(
                "IPPO trains each agent's own policy and critic: it needs policies='per_agent' "
                "(for one policy shared by every agent, use magrpo)"
            )

        check_critic_settings(self)  # clip_low and clip_high: checked by MultiAgentConfig
        check_counts(mini_batch_size=self.mini_batch_size)
        if self.critic == "value_head" and self.critic_model:
            raise ValueError('critic_model names a separate value model: it needs critic="model"')


def train(config: IPPOConfig, *, env: EnvFactory | None = None) -> Path:
    """Run IPPO until ``run.max_steps``; return the final directory: ``final/<agent>/`` for each
    agent's policy (with its value head, when it has one) and ``final/critic_<agent>/`` for each
    separate critic, each with ``save_pretrained`` weights (policies with their tokenizer).

    ``env``: a zero-argument factory of the env to play instead of ``config.env_id`` (see
    :func:`~mrlm.train.algorithms.multi_agent.train`).
    """
    check_output_dir(config.run.output_dir)  # before the models load, which may take minutes
    make_env = run_env(config, env)
    agents = env_agents(make_env, config.env_id, training_seed_base(config.run.seed))
    check_model_names(config, agents)
    models, tokenizers = load_models(config, agents)
    critics = {critic_name(config, agent) for agent in agents} - {None}
    critic_optim = dataclasses.replace(config.optim, learning_rate=config.critic_learning_rate)
    optim = {name: critic_optim if name in critics else config.optim for name in models}
    references = load_policies(config, agents)[0] if config.kl_coef > 0 else {}
    frozen = {REFERENCE_PREFIX + name: model for name, model in references.items()}
    with TrainingSession.for_config(config, models, frozen=frozen, optim=optim) as session:
        engine = rollout_engine(config, session, tokenizers, make_env)
        seeds = run_task_seeds(config, session)
        state = session.restore()
        if state:
            seeds.cursor = int(state["seed_cursor"])
            engine.load_state_dict(state["engine"])
        with engine:
            while session.step < config.run.max_steps:
                session.log(train_step(session, engine, seeds, config, tokenizers))
                session.maybe_save({"seed_cursor": seeds.cursor, "engine": engine.state_dict()})
        return session.save_final(tokenizers, unnamed_openings=list(tokenizers))  # each agent's own policy


def critic_name(config: IPPOConfig, agent: str) -> str | None:
    """The session name of ``agent``'s separate critic: ``critic_<agent>`` with critic="model",
    None with a value head (the critic is the policy's own)."""
    return CRITIC_PREFIX + agent if config.critic == "model" else None


def check_model_names(config: IPPOConfig, agents: Sequence[str]) -> None:
    """Refuse agent names that would give two of the run's models one name: an agent's policy, its
    critic (:func:`critic_name`) and, with kl_coef > 0, its reference (``reference_<agent>``).

    Raises:
        MultiAgentSetupError: a repeated name, such as agent ``critic_writer`` beside agent
            ``writer`` with critic="model".
    """
    names = list(agents)
    names += [name for agent in agents if (name := critic_name(config, agent)) is not None]
    if config.kl_coef > 0:
        names += [REFERENCE_PREFIX + agent for agent in agents]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise MultiAgentSetupError(
            f"the env's agents {list(agents)} would give IPPO two models called "
            f"{', '.join(map(repr, repeated))} (agent <a>'s critic is {CRITIC_PREFIX}<a> with "
            f'critic="model", its reference {REFERENCE_PREFIX}<a> with kl_coef > 0): rename the agents'
        )


def load_models(config: IPPOConfig, agents: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The models to train (each agent's policy with its value head, or each agent's policy and
    its critic, named by :func:`critic_name`) and each agent's tokenizer."""
    policies, tokenizers = load_policies(config, agents)
    models: dict[str, Any] = {}
    for agent, policy in policies.items():
        name = critic_name(config, agent)
        if name is None:
            models[agent] = PolicyWithValueHead(policy)
        else:
            models[agent] = policy
            models[name] = load_critic(policy, tokenizers[agent], config.critic_model, config.model.dtype)
    return models, tokenizers


def policy_and_critic(
    session: TrainingSession, agent: str, config: IPPOConfig
) -> tuple[torch.nn.Module, torch.nn.Module | None]:
    """``agent``'s policy and its separate critic in ``session`` (None with a value head)."""
    name = critic_name(config, agent)
    return session.models[agent], None if name is None else session.models[name]


def train_step(
    session: TrainingSession,
    engine: RolloutEngine,
    seeds: TaskSeeds,
    config: IPPOConfig,
    tokenizers: dict[str, Any],
) -> dict[str, float]:
    """One IPPO step (see the module docstring); returns its metrics (:data:`METRICS` and more)."""
    started = time.perf_counter()
    # 1. rollout, with each row's credited reward of every turn
    with generation(session):
        collected = collect_rows(engine, seeds, config)
    rollout_s = time.perf_counter() - started
    session.check_finite(collected.rewards, "rewards (as returned by the env)")
    credited = [
        dataclasses.replace(row, turn_rewards=list(turns))
        for row, turns in zip(collected.rows, collected.turn_rewards, strict=True)
    ]

    # 2-4. each agent's token rewards, values and advantages
    parts: dict[str, Part] = {}
    metrics: dict[str, float] = {}
    kl_sums = [0.0, 0.0]
    for agent in tokenizers:
        own = [row for row in credited if row.policy == agent]
        if not own:
            raise MultiAgentSetupError(
                f"agent {agent!r} played no row this step on process {session.rank}: every agent must "
                "act in every episode"
            )
        batch = collate(own, tokenizers[agent].pad_token_id, device=session.device)
        prepared = prepare_agent(session, agent, batch, config)
        parts[agent] = Part(batch, prepared.loss_fn(session, agent, config))
        metrics.update(prepared.metrics(session, agent))
        kl_sums[0] += float((prepared.kl * batch.mask).sum())
        kl_sums[1] += float(batch.mask.sum())

    # 5. update: every agent's epochs of mini-batches together
    result = update_parts(
        session,
        parts,
        micro_batch_size=config.micro_batch_size,
        num_iterations=config.num_iterations,
        mini_batch_size=config.mini_batch_size,
        shuffle=epoch_shuffle(session),
        stop=kl_stop(config.target_kl),
    )

    # 6. logging
    for agent, part in result.parts.items():
        # "policy/loss" of agent "first" is logged as "policy/first/loss"
        for key, value in part.extras.items():
            group, _, name = key.partition("/")
            metrics[f"{group}/{agent}/{name}"] = value
    gathered = session.gather_object(kl_sums)
    tokens = sum(part.normalisers.global_tokens for part in result.parts.values())
    elapsed = time.perf_counter() - started
    return {
        "reward": session.all_reduce_mean(float(collected.rewards.mean())),
        "episode_success": session.all_reduce_mean(collected.episode_success),
        "loss": result.loss,
        **result.extras,
        **metrics,
        "kl": sum(g[0] for g in gathered) / max(sum(g[1] for g in gathered), 1.0),
        "epochs": float(result.iterations),
        "grad_norm": result.grad_norm,
        "lr": result.lr,
        "tokens": tokens,
        "tokens_per_s": tokens / max(elapsed, 1e-9),
        "step_s": elapsed,
        "rollout_s": rollout_s,
        **rollout_metrics(session, collected.rows),
        **agent_metrics(session, collected.rows),
        **{k: v for k, v in result.optimizer.items() if "/" in k},
    }


@dataclass(frozen=True)
class AgentTargets:
    """One agent's sampling-time quantities, each ``[B, T]`` over its rows."""

    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    kl: torch.Tensor
    """Per-token k1 KL to the reference at sampling time (0 without one)."""
    ref_logprobs: torch.Tensor | None
    mask: torch.Tensor

    def loss_fn(self, session: TrainingSession, agent: str, config: IPPOConfig) -> LossFn:
        """The agent's PPO loss of a micro-batch of its rows."""
        policy, critic = policy_and_critic(session, agent, config)
        with_entropy = config.entropy_coef > 0

        def loss(
            micro: RolloutBatch, rows: Rows, norms: Normalisers
        ) -> tuple[torch.Tensor, dict[str, float]]:
            return ppo_loss(
                score(policy, critic, micro, config.temperature, with_entropy=with_entropy),
                micro,
                advantages=self.advantages[rows],
                returns=self.returns[rows],
                old_values=self.old_values[rows],
                ref_logprobs=self.ref_logprobs[rows] if self.ref_logprobs is not None else None,
                config=config,
                num_tokens=norms.num_tokens,
            )

        return loss

    def metrics(self, session: TrainingSession, agent: str) -> dict[str, float]:
        """``value/<agent>/mean``, ``value/<agent>/explained_variance``, ``returns/<agent>/mean``. Collective."""
        return {
            f"value/{agent}/mean": global_token_mean(session, self.old_values, self.mask),
            f"value/{agent}/explained_variance": global_explained_variance(
                session, self.old_values, self.returns, self.mask
            ),
            f"returns/{agent}/mean": global_token_mean(session, self.returns, self.mask),
        }


def prepare_agent(
    session: TrainingSession, agent: str, batch: RolloutBatch, config: IPPOConfig
) -> AgentTargets:
    """Steps 2-4 for one agent's rows: values, rewards on tokens, GAE, whitening. Collective."""
    policy, critic = policy_and_critic(session, agent, config)
    (values,) = chunked_without_grad(
        session,
        batch,
        config.micro_batch_size,
        lambda rows: (score(policy, critic, rows, config.temperature).values,),
    )
    mask = batch.mask
    old_values = torch.where(mask.bool(), values, torch.zeros_like(values))
    ref_logprobs = None
    reference = session.frozen.get(REFERENCE_PREFIX + agent)
    if reference is not None:
        temperature = config.temperature or 1.0
        (ref_logprobs,) = chunked_without_grad(
            session,
            batch,
            config.micro_batch_size,
            lambda rows: (
                token_logprobs(reference, rows.input_ids, rows.attention_mask, rows.mask, temperature),
            ),
        )
    assert batch.token_rewards is not None  # collate() always sets them
    rewards = rewards_on_actions(batch.token_rewards, mask) * mask
    kl = torch.zeros_like(rewards)
    if ref_logprobs is not None:
        penalised, kl = kl_penalised_rewards(rewards, batch.old_logprobs, ref_logprobs, mask, config.kl_coef)
        if config.kl_in == "reward":
            rewards = penalised
    advantages, returns = gae(rewards, old_values, mask, gamma=config.gamma, lam=config.lam)
    if config.whiten_advantages:
        advantages = global_whiten(session, advantages, mask)
    return AgentTargets(old_values, advantages, returns, kl, ref_logprobs, mask)
