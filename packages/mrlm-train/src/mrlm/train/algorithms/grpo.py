"""GRPO: group relative policy optimisation on any Gymnasium text env.

Shao et al. 2024 (DeepSeekMath), with the variants that later work showed to matter, each a switch
of :class:`GRPOConfig` backed by a pure function in :mod:`mrlm.train.ops`:

1. **rollout**: ``prompts_per_step`` tasks (env seeds), ``group_size`` episodes each, all reset with
   the task's seed so that a group answers the same task;
2. **scoring**: each trajectory's total reward; with ``dynamic_sampling`` groups whose rewards are all
   equal are dropped and more tasks sampled (DAPO);
3. **advantages**: ``A_i = (r_i - mean_group(r)) / (std + eps)`` (std per group, per batch or none);
4. **update**: ``num_iterations`` optimizer steps over the batch in micro-batches (one training
   step; see :func:`~mrlm.train.algorithms.onpolicy.update`), minimising::

       L = agg_t[ -min(ratio_t A, clip(ratio_t, 1 - clip_low, 1 + clip_high) A) + kl_coef * k3_t ]

   with ``ratio_t = pi(y_t) / pi_old(y_t)`` per token or per sequence (GSPO) and ``agg`` the
   per-sequence mean, the token mean (DAPO) or a constant normaliser (Dr. GRPO);
5. **logging** (:class:`StepStats` and :func:`~mrlm.train.algorithms.onpolicy.rollout_metrics`)
   and checkpoints.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from mrlm.train.algorithms.onpolicy import (
    Engine,
    Normalisers,
    Rows,
    TaskSeeds,
    check_rollout_envs,
    check_rollout_settings,
    parse_env_kwargs,
    rollout_for,
    rollout_metrics,
    update,
)
from mrlm.train.config_io import check_values
from mrlm.train.generation import HFGenerator
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.config import check_no_accumulation
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.mixture import parse_mixture
from mrlm.train.ops.advantages import group_relative_advantages, groups_with_signal
from mrlm.train.ops.kl import kl_k3
from mrlm.train.ops.policy_loss import aggregate, check_clip_range, clipped_surrogate, importance_ratio
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.rollout import Trajectory
from mrlm.train.rollout.batch import RolloutBatch, collate, reward_tensor
from mrlm.train.setting_checks import check_counts, check_non_negative

#: The frozen reference policy's name in the session.
REFERENCE = "reference"


@dataclass
class GRPOConfig:
    """Everything one GRPO run needs: flags on the command line, or --config FILE (YAML, the same keys)."""

    env_id: str = "mrlm/Math-v0"
    """Environment id (``mrlm-envs list``), local or remote."""
    env_kwargs: str = "{}"
    """The env's keyword arguments as a JSON object, such as '{"level": 1}'."""
    env_mixture: str = ""
    """Several envs at once, replacing env_id and env_kwargs: a JSON list such as
    '[{"id": "mrlm/Math-v0", "weight": 2}, {"id": "mrlm/Code-v0", "kwargs": {}, "name": "code"}]';
    each task's env is drawn by weight (see mrlm.train.mixture)."""
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="tiny"))
    """The policy: a Hugging Face model name or path, or "tiny" for a small local model."""

    group_size: int = 8
    """Episodes per task (answers compared with each other)."""
    prompts_per_step: int = 2
    """Tasks per optimizer step and process; the batch is prompts_per_step * group_size episodes."""
    max_new_tokens: int = 64
    """Longest reply, in tokens."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    max_turns: int = 1
    """Replies per episode after which the rollout stops (multi-turn envs)."""
    ignore_stop: bool = False
    """Never stop a reply at a stop token: every reply has exactly max_new_tokens tokens (benchmarks)."""

    std_scaling: Literal["group", "batch", "none"] = "group"
    """Divide centred rewards by the group's std (GRPO), the batch's, or not at all (Dr. GRPO)."""
    clip_low: float = 0.2
    """Lower clip of the importance ratio: 1 - clip_low."""
    clip_high: float = 0.2
    """Upper clip of the importance ratio: 1 + clip_high (DAPO's clip-higher uses 0.28)."""
    ratio_level: Literal["token", "sequence"] = "token"
    """Importance ratio per token (GRPO) or per sequence (GSPO)."""
    aggregation: Literal["sequence_mean", "token_mean", "constant"] = "sequence_mean"
    """Average of token losses: per sequence (GRPO), per token (DAPO), constant normaliser (Dr. GRPO)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL to the frozen initial policy; 0 skips the reference model."""
    num_iterations: int = 1
    """Optimisation passes over each batch of rollouts."""
    micro_batch_size: int = 8
    """Trajectories per forward/backward pass (the last one of a batch may hold fewer)."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards are all equal and sample more tasks (DAPO)."""
    max_sampling_rounds: int = 4
    """With dynamic_sampling: rollout rounds per step before training on what there is."""
    recompute_old_logprobs: bool = False
    """Recompute the sampling log-probs with the training forward before the update (for sampling
    in another engine or precision than training); otherwise the sampler's own are used."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/grpo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=1e-4))
    """Optimizer and learning-rate schedule."""
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    """DDP/FSDP, mixed precision."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be at least 2 (advantages compare answers), got {self.group_size}"
            )
        check_counts(
            prompts_per_step=self.prompts_per_step,
            micro_batch_size=self.micro_batch_size,
            num_iterations=self.num_iterations,
            max_sampling_rounds=self.max_sampling_rounds,
        )
        check_rollout_settings(self)
        check_no_accumulation(self.dist, "GRPO splits each batch into micro-batches of micro_batch_size")
        check_clip_range(self.clip_low, self.clip_high)
        check_non_negative(kl_coef=self.kl_coef)
        self.parsed_env_kwargs()
        if self.env_mixture:
            parse_mixture(self.env_mixture)

    def parsed_env_kwargs(self) -> dict[str, Any]:
        return parse_env_kwargs(self.env_kwargs)


@dataclass
class StepStats:
    """What one update step reports (also the keys of metrics.jsonl)."""

    reward: float
    """Mean total reward of the episodes trained on."""
    sampled_reward: float
    """Mean total reward of every episode sampled this step, including groups dynamic sampling dropped."""
    loss: float
    kl: float
    """Mean k3 estimate of KL(policy || reference) on the trained tokens (0 when kl_coef is 0)."""
    clip_fraction: float
    approx_kl: float
    """Mean k3 estimate of KL(sampling policy || updated policy): how far the iterations moved."""
    groups_kept: float
    grad_norm: float
    """Gradient norm before clipping, averaged over the step's optimizer steps."""
    lr: float
    """Learning rate of the step."""
    tokens: float
    """Trained (generated) tokens of the step, over all processes."""
    tokens_per_s: float
    step_s: float
    """Wall time of the step: rollout, scoring, advantages and update."""
    rollout_s: float
    """Wall time of the rollout alone (env resets and steps, tokenization, generation)."""


class SurrogateSettings(Protocol):
    """The fields of a config that :func:`grpo_loss` reads (GRPO's, and the multi-agent family's)."""

    temperature: float
    ratio_level: Literal["token", "sequence"]
    clip_low: float
    clip_high: float
    kl_coef: float
    aggregation: Literal["sequence_mean", "token_mean", "constant"]
    max_new_tokens: int
    max_turns: int


def grpo_loss(
    model: Any,
    batch: RolloutBatch,
    adv: torch.Tensor,
    config: SurrogateSettings,
    *,
    ref_logprobs: torch.Tensor | None,
    num_sequences: float,
    num_tokens: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss of one micro-batch, normalised so that micro-batch losses sum to the batch loss.

    Args:
        model: the policy being trained.
        batch: ``B`` trajectories (``[B, T]`` tensors), with the log-probs recorded at sampling time.
        adv: ``[B]`` advantages.
        ref_logprobs: ``[B, T]`` log-probs under the reference model, needed when ``kl_coef > 0``.
        num_sequences, num_tokens: this process's share of the global batch's sequences and masked
            tokens (see :class:`~mrlm.train.algorithms.onpolicy.Normalisers`).
    """
    temperature = config.temperature if config.temperature > 0 else 1.0
    logp = token_logprobs(model, batch.input_ids, batch.attention_mask, batch.mask, temperature)  # [B, T]
    ratio = importance_ratio(logp, batch.old_logprobs, batch.mask, config.ratio_level)
    token_loss, stats = clipped_surrogate(
        ratio, adv, batch.mask, clip_low=config.clip_low, clip_high=config.clip_high
    )
    kl_value = 0.0
    if config.kl_coef > 0:
        assert ref_logprobs is not None
        kl = kl_k3(logp, ref_logprobs) * batch.mask
        token_loss = token_loss + config.kl_coef * kl
        kl_value = float(kl.detach().sum() / batch.mask.sum().clamp(min=1.0))
    loss = aggregate(
        token_loss,
        batch.mask,
        config.aggregation,
        num_sequences=num_sequences,
        num_tokens=num_tokens,
        max_length=config.max_new_tokens * config.max_turns,
    )
    return loss, {"clip_fraction": stats.clip_fraction, "approx_kl": stats.approx_kl, "kl": kl_value}


def old_logprobs(session: TrainingSession, batch: RolloutBatch, config: GRPOConfig) -> torch.Tensor:
    """``[B, T]`` log-probs of the sampled tokens under the policy as it is now, by the training
    forward (the model as the session wraps it), in micro-batches; no gradient. Collective under
    FSDP: every process runs the same number of forwards."""
    size = int(batch.mask.shape[0])
    passes = max(int(n) for n in session.gather_object(-(-size // config.micro_batch_size)))
    parts = []
    with torch.no_grad():
        for i in range(passes):
            start = i * config.micro_batch_size if i * config.micro_batch_size < size else 0
            rows = slice(start, min(start + config.micro_batch_size, size))
            logp = token_logprobs(
                session.model,
                batch.input_ids[rows],
                batch.attention_mask[rows],
                batch.mask[rows],
                config.temperature or 1.0,
            )
            if i * config.micro_batch_size < size:
                parts.append(logp)
    return torch.cat(parts)


def collect_batch(
    engine: Engine, seeds: TaskSeeds, config: GRPOConfig
) -> tuple[list[Trajectory], float, float]:
    """Rollout and scoring: ``prompts_per_step`` groups, with dynamic sampling when enabled.

    Returns the trajectories (group-contiguous), the share of sampled groups that were kept, and
    the mean reward of every sampled episode (the policy's success, unbiased by the dropping).
    """
    kept: list[Trajectory] = []
    sampled = kept_groups = 0
    reward_sum = 0.0
    for _ in range(config.max_sampling_rounds if config.dynamic_sampling else 1):
        needed = config.prompts_per_step - len(kept) // config.group_size
        trajectories = engine.collect(seeds.take(needed), config.group_size)
        rewards = reward_tensor(trajectories)
        reward_sum += float(rewards.sum())
        useful = groups_with_signal(rewards, config.group_size)
        sampled += len(useful)
        for g, keep in enumerate(useful.tolist()):
            if keep or not config.dynamic_sampling:
                kept.extend(trajectories[g * config.group_size : (g + 1) * config.group_size])
                kept_groups += 1
        if len(kept) >= config.prompts_per_step * config.group_size:
            break
    if not kept:  # every group was flat: train on the last round (zero advantages, zero gradient)
        kept = trajectories
    sampled_reward = reward_sum / max(sampled * config.group_size, 1)
    return kept[: config.prompts_per_step * config.group_size], kept_groups / max(sampled, 1), sampled_reward


def train(config: GRPOConfig) -> Path:
    """Run GRPO as configured; return the directory of the final model (``save_pretrained`` format)."""
    check_output_dir(config.run.output_dir)  # before the model loads, which may take minutes
    check_rollout_envs(config)  # an unknown id, a server not there, an env that cannot start: as early
    model, tokenizer = load_policy(config.model, chat=True, seed=config.run.seed)
    # The reference is the initial policy, frozen; the session places (and shards) it.
    frozen = {REFERENCE: load_policy(config.model, seed=config.run.seed)[0]} if config.kl_coef > 0 else {}

    with TrainingSession.for_config(config, model, frozen=frozen) as session:
        generator = HFGenerator(session.unwrapped_model, tokenizer)
        engine, seeds = rollout_for(config, session, generator, tokenizer)
        state = session.restore()
        if state:
            seeds.cursor = int(state["seed_cursor"])
            engine.load_state_dict(state["engine"])

        with engine:
            while session.step < config.run.max_steps:
                stats, extra = train_step(session, engine, seeds, config, tokenizer)
                session.log({**dataclasses.asdict(stats), **extra})
                session.maybe_save({"seed_cursor": seeds.cursor, "engine": engine.state_dict()})
        return session.save_final(tokenizer)


def train_step(
    session: TrainingSession, engine: Engine, seeds: TaskSeeds, config: GRPOConfig, tokenizer: Any
) -> tuple[StepStats, dict[str, float]]:
    """One GRPO training step; returns its stats and the rollout's metrics (reward per env, ...)."""
    started = time.perf_counter()
    # 1-2. rollout and scoring
    # Under FSDP the weights are gathered for the rollout, so each process samples on its own.
    with session.generation_mode():
        trajectories, kept_share, sampled_reward = collect_batch(engine, seeds, config)
    rollout_s = time.perf_counter() - started
    batch = collate(trajectories, tokenizer.pad_token_id, device=session.device)

    # A NaN reward would surface later as a NaN loss; name its source instead.
    session.check_finite(batch.rewards, "rewards (as returned by the env)")

    # 3. advantages
    adv = group_relative_advantages(batch.rewards, config.group_size, scale=config.std_scaling)

    if config.recompute_old_logprobs:
        batch = dataclasses.replace(batch, old_logprobs=old_logprobs(session, batch, config))

    ref_logprobs = None
    if REFERENCE in session.frozen:
        with torch.no_grad():  # one call on every process: under FSDP the forward is collective
            ref_logprobs = token_logprobs(
                session.frozen[REFERENCE],
                batch.input_ids,
                batch.attention_mask,
                batch.mask,
                config.temperature or 1.0,
            )

    # 4. update: num_iterations optimizer steps over the batch, as one training step
    def loss_fn(micro: RolloutBatch, rows: Rows, norms: Normalisers) -> tuple[torch.Tensor, dict[str, float]]:
        return grpo_loss(
            session.model,
            micro,
            adv[rows],
            config,
            ref_logprobs=ref_logprobs[rows] if ref_logprobs is not None else None,
            num_sequences=norms.num_sequences,
            num_tokens=norms.num_tokens,
        )

    result = update(
        session,
        batch,
        loss_fn,
        micro_batch_size=config.micro_batch_size,
        num_iterations=config.num_iterations,
    )
    metrics = rollout_metrics(session, trajectories)

    elapsed = time.perf_counter() - started
    tokens = result.normalisers.global_tokens
    stats = StepStats(
        reward=session.all_reduce_mean(float(batch.rewards.mean())),
        sampled_reward=session.all_reduce_mean(sampled_reward),
        loss=result.loss,
        kl=result.extras["kl"],
        clip_fraction=result.extras["clip_fraction"],
        approx_kl=result.extras["approx_kl"],
        groups_kept=session.all_reduce_mean(kept_share),
        grad_norm=result.grad_norm,
        lr=result.lr,
        tokens=tokens,
        tokens_per_s=tokens / max(elapsed, 1e-9),
        step_s=elapsed,
        rollout_s=rollout_s,
    )
    return stats, {**metrics, **{k: v for k, v in result.optimizer.items() if "/" in k}}
