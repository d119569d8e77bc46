"""PPO with a critic on any Gymnasium text env, single- or multi-turn.

Schulman et al. 2017, as Ouyang et al. 2022 (InstructGPT) apply it to language models; each part a
pure function of :mod:`mrlm.train.ops`:

1. **rollout**: ``prompts_per_step`` tasks (env seeds), ``group_size`` episodes each (1 by default;
   more shares each prompt's prefill), with the sampling log-probs ``log pi_old(y_t)``;
2. **rewards on tokens**: each turn's env reward on the last token of that turn's reply
   (:func:`~mrlm.train.ops.rewards.rewards_on_actions`), optionally clipped to ``[-c, c]`` and
   divided by the std of the batch's episode returns; with ``kl_coef > 0`` and ``kl_in="reward"``
   every model token pays the KL to the frozen reference::

       r_t <- r_t - beta * (log pi_old(y_t) - log pi_ref(y_t))

   with ``beta`` fixed, or adapted after every step towards ``kl_target`` (Ziegler et al. 2019);
3. **values** ``V_t`` of the critic (a value head on the policy's trunk, or a separate value model)
   for the state before each model token, at sampling time;
4. **advantages** by GAE over the model's tokens only (the env's text between turns is not an
   action, so an early turn's advantage carries the rewards of later turns)::

       delta_t = r_t + gamma * V_t' - V_t          (t' the next model token, V = 0 after the last)
       A_t     = delta_t + gamma * lam * A_t'
       R_t     = A_t + V_t                         (the critic's target)

   and the advantages whitened over the batch's tokens;
5. **update**: ``ppo_epochs`` passes over the batch in shuffled mini-batches (one optimizer step
   each; see :func:`~mrlm.train.algorithms.onpolicy.update`), minimising the token mean of::

       -min(ratio_t A_t, clip(ratio_t, 1 - eps, 1 + eps) A_t)
       + vf_coef * 0.5 * max((V_t - R_t)^2, (V_old_t + clip(V_t - V_old_t, -eps_v, eps_v) - R_t)^2)
       - entropy_coef * H_t
       + kl_coef * k3(pi || pi_ref)_t                                       (with kl_in="loss")

   where ``ratio_t = pi(y_t) / pi_old(y_t)``; the passes stop early once a pass's approximate
   KL(pi_old || pi) exceeds ``target_kl``;
6. **logging** (the keys of :data:`METRICS`) and checkpoints.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from mrlm.train.algorithms.onpolicy import (
    Engine,
    Normalisers,
    Rows,
    StopFn,
    TaskSeeds,
    check_rollout_envs,
    check_rollout_settings,
    parse_env_kwargs,
    rollout_for,
    rollout_metrics,
    select_rows,
    update,
)
from mrlm.train.config_io import check_values
from mrlm.train.generation import HFGenerator
from mrlm.train.generation.logprobs import token_logprobs, token_logprobs_and_entropy
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.config import check_no_accumulation
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.mixture import parse_mixture
from mrlm.train.ops.estimators import gae
from mrlm.train.ops.kl import AdaptiveKLController, kl_k3
from mrlm.train.ops.policy_loss import clipped_surrogate, importance_ratio
from mrlm.train.ops.rewards import clip_rewards, kl_penalised_rewards, rewards_on_actions
from mrlm.train.ops.value_loss import clipped_value_loss
from mrlm.train.policy import Dtype, ModelConfig, load_policy
from mrlm.train.rollout.batch import RolloutBatch, collate
from mrlm.train.setting_checks import check_counts, check_non_negative, check_positive
from mrlm.train.value import (
    PolicyWithValueHead,
    causal_lm,
    load_value_model,
    token_values,
    value_model_from,
)

#: The names of the models in the session.
POLICY, CRITIC, REFERENCE = "policy", "critic", "reference"

METRICS = {
    "reward": "mean total reward of the step's episodes",
    "loss": "the mean over passes of the whole objective",
    "policy/loss": "clipped surrogate, token mean",
    "policy/clip_fraction": "share of tokens whose ratio was clipped",
    "policy/approx_kl": "k3 estimate of KL(sampling policy || updated policy)",
    "policy/entropy": "mean entropy of the policy at the trained tokens (only with entropy_coef > 0)",
    "value/loss": "clipped value loss, token mean",
    "value/clip_fraction": "share of tokens where the clipped value term was the larger",
    "value/mean": "mean value of the critic at sampling time",
    "value/explained_variance": "1 - Var(R - V) / Var(R) at sampling time, over every process's tokens",
    "returns/mean": "mean GAE return (the critic's target)",
    "kl": "mean per-token KL(policy || reference) at sampling time (k1; 0 without a reference)",
    "kl_coef": "the KL coefficient of the step (adaptive with kl_target > 0)",
    "epochs": "passes over the batch run (fewer than ppo_epochs when target_kl stopped them)",
    "grad_norm": "the policy's gradient norm before clipping, mean over the step's optimizer steps",
    "lr": "the policy's learning rate",
    "tokens": "trained tokens of the step over all processes",
    "tokens_per_s": "trained tokens per second of the step",
    "step_s": "wall time of the step",
    "rollout_s": "wall time of the rollout",
}
"""What every PPO step logs (besides :func:`~mrlm.train.algorithms.onpolicy.rollout_metrics`'
``reply_tokens``, ``cut_at_length``, ``entropy``, ``reward/<env>``, ``success/<env>``, and
``grad_norm/critic``, ``lr/critic`` with a separate critic)."""


@dataclass
class PPOConfig:
    """Everything one PPO run needs: flags on the command line, or --config FILE (YAML, the same keys)."""

    env_id: str = "mrlm/Math-v0"
    """Environment id (``mrlm-envs list``), local or remote."""
    env_kwargs: str = "{}"
    """The env's keyword arguments as a JSON object, such as '{"level": 1}'."""
    env_mixture: str = ""
    """Several envs at once, replacing env_id and env_kwargs (a JSON list; see mrlm.train.mixture)."""
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="tiny"))
    """The policy: a Hugging Face model name or path, or "tiny" for a small local model."""

    critic: Literal["value_head", "model"] = "value_head"
    """A value head on the policy's trunk (one model, trained by the policy's optimizer), or a
    separate value model with its own optimizer."""
    critic_model: str = ""
    """With critic="model": the value model's backbone, a model name or path ("tiny" for the tiny
    local one); empty starts it from the policy's own weights."""
    critic_learning_rate: float = 1e-4
    """With critic="model": the value model's learning rate (the rest of optim is shared)."""

    prompts_per_step: int = 16
    """Tasks per step and process."""
    group_size: int = 1
    """Episodes per task; the batch is prompts_per_step * group_size episodes per process."""
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

    gamma: float = 1.0
    """Discount per model token in GAE."""
    lam: float = 0.95
    """GAE's lambda: 0 is one-step TD, 1 the Monte Carlo return."""
    whiten_advantages: bool = True
    """Shift and scale the advantages to mean 0, std 1 over the batch's tokens."""
    reward_clip: float = 0.0
    """Clip every env reward to [-reward_clip, reward_clip]; 0 does not clip."""
    reward_scaling: bool = False
    """Divide the env rewards by the std of the batch's episode returns."""
    kl_coef: float = 0.0
    """Weight of the KL to the frozen initial policy; 0 skips the reference model."""
    kl_in: Literal["reward", "loss"] = "reward"
    """Pay the KL in the reward, per token (InstructGPT), or add its k3 estimate to the loss."""
    kl_target: float = 0.0
    """With kl_in="reward": adapt kl_coef after each step towards this mean KL per reply; 0 keeps it fixed."""
    kl_horizon: float = 10_000.0
    """With kl_target: how many replies the coefficient takes to move by about 20%."""

    clip_range: float = 0.2
    """Clip of the importance ratio: [1 - clip_range, 1 + clip_range]."""
    value_clip_range: float = 0.2
    """How far a value may move from its sampling-time value before the clipped term takes over; 0 does not clip."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus (the model's forward then computes full distributions)."""
    ppo_epochs: int = 4
    """Passes over each batch of rollouts."""
    mini_batch_size: int = 8
    """Trajectories per optimizer step and process (a pass is batch / mini_batch_size steps)."""
    micro_batch_size: int = 8
    """Trajectories per forward/backward pass (gradient accumulation within a mini-batch)."""
    target_kl: float = 0.0
    """Stop a step's passes once a pass's approximate KL(sampling policy || policy) exceeds this; 0 never stops."""
    recompute_old_logprobs: bool = False
    """Recompute the sampling log-probs with the training forward before the update."""

    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/ppo", max_steps=50))
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=1e-5))
    """Optimizer and learning-rate schedule (of the policy, and of a separate critic but its rate)."""
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    """DDP/FSDP, mixed precision."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        check_counts(
            prompts_per_step=self.prompts_per_step,
            group_size=self.group_size,
            ppo_epochs=self.ppo_epochs,
            mini_batch_size=self.mini_batch_size,
            micro_batch_size=self.micro_batch_size,
        )
        check_rollout_settings(self)
        check_critic_settings(self)
        check_no_accumulation(
            self.dist,
            "PPO splits each batch into mini-batches of mini_batch_size (an optimizer step each) and "
            "those into micro-batches of micro_batch_size",
        )
        if not 0 < self.clip_range < 1:  # the ratio's clip interval must hold 1 and stay above 0
            raise ValueError(f"clip_range must be in (0, 1), got {self.clip_range}")
        check_non_negative(kl_coef=self.kl_coef, kl_target=self.kl_target, reward_clip=self.reward_clip)
        check_positive(kl_horizon=self.kl_horizon)
        if self.kl_target > 0 and self.kl_in != "reward":
            raise ValueError('kl_target adapts the KL penalty of the reward: it needs kl_in="reward"')
        if self.critic == "value_head" and self.critic_model:
            raise ValueError('critic_model names a separate value model: it needs critic="model"')
        self.parsed_env_kwargs()
        if self.env_mixture:
            parse_mixture(self.env_mixture)

    def parsed_env_kwargs(self) -> dict[str, Any]:
        return parse_env_kwargs(self.env_kwargs)

    @property
    def clip_low(self) -> float:
        """The ratio's lower clip, 1 - clip_low (PPO's is symmetric)."""
        return self.clip_range

    @property
    def clip_high(self) -> float:
        """The ratio's upper clip, 1 + clip_high."""
        return self.clip_range

    @property
    def uses_reference(self) -> bool:
        return self.kl_coef > 0


@dataclass(frozen=True)
class Scored:
    """What the policy and critic give for a batch, each ``[B, T]``: log-probs, values, entropy (or None)."""

    logprobs: torch.Tensor
    values: torch.Tensor
    entropy: torch.Tensor | None


class PPOLossSettings(Protocol):
    """What :func:`ppo_loss` reads of a config (:class:`PPOConfig`, or IPPO's)."""

    @property
    def clip_low(self) -> float: ...
    @property
    def clip_high(self) -> float: ...
    @property
    def value_clip_range(self) -> float: ...
    @property
    def vf_coef(self) -> float: ...
    @property
    def entropy_coef(self) -> float: ...
    @property
    def kl_coef(self) -> float: ...
    @property
    def kl_in(self) -> Literal["reward", "loss"]: ...


class CriticSettings(Protocol):
    """The settings of GAE and of the value loss that PPO and IPPO share."""

    @property
    def gamma(self) -> float: ...
    @property
    def lam(self) -> float: ...
    @property
    def value_clip_range(self) -> float: ...
    @property
    def vf_coef(self) -> float: ...
    @property
    def entropy_coef(self) -> float: ...
    @property
    def target_kl(self) -> float: ...
    @property
    def critic_learning_rate(self) -> float: ...


def check_critic_settings(config: CriticSettings) -> None:
    """Raise ValueError for a GAE or value-loss setting out of range, naming it (PPO's and IPPO's)."""
    if not (0.0 <= config.gamma <= 1.0 and 0.0 <= config.lam <= 1.0):
        raise ValueError(f"gamma and lam must be in [0, 1], got {config.gamma} and {config.lam}")
    check_non_negative(
        value_clip_range=config.value_clip_range,
        vf_coef=config.vf_coef,
        entropy_coef=config.entropy_coef,
        target_kl=config.target_kl,
        critic_learning_rate=config.critic_learning_rate,
    )


def score(
    policy: torch.nn.Module,
    critic: torch.nn.Module | None,
    batch: RolloutBatch,
    temperature: float,
    *,
    with_entropy: bool = False,
) -> Scored:
    """Log-probs of the sampled tokens and values of their states under the models as they are
    (trained by the caller when gradients are on): ``policy`` with a value head when ``critic`` is
    None, else a causal LM and the separate value model ``critic``. Collective under FSDP."""
    temperature = temperature or 1.0
    if critic is None:
        out = policy(batch.input_ids, batch.attention_mask, batch.mask, temperature, with_entropy)
        return Scored(out.logprobs, out.values, out.entropy)
    if with_entropy:
        logp, entropy = token_logprobs_and_entropy(
            policy, batch.input_ids, batch.attention_mask, batch.mask, temperature
        )
    else:
        logp, entropy = (
            token_logprobs(policy, batch.input_ids, batch.attention_mask, batch.mask, temperature),
            None,
        )
    values = token_values(critic, batch.input_ids, batch.attention_mask)
    return Scored(logp, values, entropy)


def ppo_loss(
    scored: Scored,
    batch: RolloutBatch,
    *,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    config: PPOLossSettings,
    num_tokens: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The PPO objective of one micro-batch (see the module docstring), divided by ``num_tokens``
    (this process's share of the mini-batch's tokens) so that micro-batch losses sum to the
    mini-batch's token mean.

    Args:
        scored: the models' log-probs, values and (with an entropy bonus) entropy, with gradients.
        batch: ``B`` trajectories, with the sampling log-probs in ``old_logprobs``.
        advantages, returns, old_values: ``[B, T]`` from GAE and the sampling-time critic.
        ref_logprobs: ``[B, T]`` reference log-probs, for ``kl_in="loss"``.
    """
    mask = batch.mask
    ratio = importance_ratio(scored.logprobs, batch.old_logprobs, mask)
    policy_tokens, surrogate = clipped_surrogate(
        ratio, advantages, mask, clip_low=config.clip_low, clip_high=config.clip_high
    )
    value_tokens, value_clipped = clipped_value_loss(
        scored.values, old_values, returns, mask, clip_range=config.value_clip_range or None
    )
    token_loss = policy_tokens + config.vf_coef * value_tokens
    tokens = mask.sum().clamp(min=1.0)
    stats = {
        "policy/loss": float(policy_tokens.detach().sum() / tokens),
        "value/loss": float(value_tokens.detach().sum() / tokens),
        "policy/clip_fraction": surrogate.clip_fraction,
        "value/clip_fraction": value_clipped,
        "policy/approx_kl": surrogate.approx_kl,
    }
    if config.entropy_coef > 0:
        assert scored.entropy is not None
        token_loss = token_loss - config.entropy_coef * scored.entropy * mask
        stats["policy/entropy"] = float((scored.entropy.detach() * mask).sum() / tokens)
    if config.kl_coef > 0 and config.kl_in == "loss":
        assert ref_logprobs is not None
        token_loss = token_loss + config.kl_coef * kl_k3(scored.logprobs, ref_logprobs) * mask
    return token_loss.sum() / max(num_tokens, 1.0), stats


def chunked_without_grad(
    session: TrainingSession,
    batch: RolloutBatch,
    size: int,
    fn: Callable[[RolloutBatch], tuple[torch.Tensor, ...]],
) -> tuple[torch.Tensor, ...]:
    """``fn``'s ``[rows, T]`` tensors over ``batch`` in chunks of ``size`` rows, without gradients,
    each joined over the chunks. Every process makes the same number of calls (a process with
    fewer chunks repeats its first one and drops the result): forwards are collective under FSDP."""
    rows = len(batch)
    calls = max(int(n) for n in session.gather_object(-(-rows // size)))
    parts = []
    with torch.no_grad():
        for i in range(calls):
            start = i * size if i * size < rows else 0
            out = fn(select_rows(batch, slice(start, min(start + size, rows))))
            if i * size < rows:
                parts.append(out)
    return tuple(torch.cat(column) for column in zip(*parts, strict=True))


class CriticModelError(ValueError):
    """A ``critic_model`` that cannot read the policy's token ids."""


def load_critic(policy: Any, tokenizer: Any, critic_model: str, dtype: Dtype) -> torch.nn.Module:
    """A separate value model for ``policy``: ``critic_model`` (a name or path) or, when empty, one
    started from the policy's own weights.

    Raises:
        CriticModelError: ``critic_model``'s vocabulary is smaller than the policy's tokenizer (the
            critic reads the policy's token ids, so it must know every one of them).
    """
    if not critic_model:
        return value_model_from(policy.get_base_model() if hasattr(policy, "get_base_model") else policy)
    critic = load_value_model(ModelConfig(name_or_path=critic_model, dtype=dtype))
    if int(critic.config.vocab_size) < len(tokenizer):
        raise CriticModelError(
            f"critic_model {critic_model!r} has a vocabulary of {critic.config.vocab_size} tokens, "
            f"fewer than the policy's tokenizer ({len(tokenizer)}): the critic must share the policy's tokenizer"
        )
    return critic


def load_models(config: PPOConfig) -> tuple[dict[str, torch.nn.Module], dict[str, torch.nn.Module], Any]:
    """The trained models (policy, and critic or value head), the frozen ones, and the tokenizer."""
    policy, tokenizer = load_policy(config.model, chat=True, seed=config.run.seed)
    frozen = {REFERENCE: load_policy(config.model, seed=config.run.seed)[0]} if config.uses_reference else {}
    if config.critic == "value_head":
        return {POLICY: PolicyWithValueHead(policy)}, frozen, tokenizer
    critic = load_critic(policy, tokenizer, config.critic_model, config.model.dtype)
    return {POLICY: policy, CRITIC: critic}, frozen, tokenizer


def train(config: PPOConfig) -> Path:
    """Run PPO as configured; return the directory of the final model(s) (``final/`` with a value
    head, ``final/policy`` and ``final/critic`` with a separate critic)."""
    check_output_dir(config.run.output_dir)  # before the models load, which may take minutes
    check_rollout_envs(config)  # an unknown id, a server not there, an env that cannot start: as early
    models, frozen, tokenizer = load_models(config)
    optim: dict[str, OptimConfig] = {POLICY: config.optim}
    if CRITIC in models:
        optim[CRITIC] = dataclasses.replace(config.optim, learning_rate=config.critic_learning_rate)

    with TrainingSession.for_config(config, models, frozen=frozen, optim=optim) as session:
        generator = HFGenerator(causal_lm(session.unwrapped(POLICY)), tokenizer)
        engine, seeds = rollout_for(config, session, generator, tokenizer)
        kl_control = AdaptiveKLController(config.kl_coef, config.kl_target or 1.0, config.kl_horizon)
        state = session.restore()
        if state:
            seeds.cursor = int(state["seed_cursor"])
            engine.load_state_dict(state["engine"])
            kl_control.load_state_dict(state["kl"])

        with engine:
            while session.step < config.run.max_steps:
                metrics = train_step(session, engine, seeds, kl_control, config, tokenizer)
                session.log(metrics)
                session.maybe_save(
                    {
                        "seed_cursor": seeds.cursor,
                        "engine": engine.state_dict(),
                        "kl": kl_control.state_dict(),
                    }
                )
        return session.save_final(tokenizer)


def train_step(
    session: TrainingSession,
    engine: Engine,
    seeds: TaskSeeds,
    kl_control: AdaptiveKLController,
    config: PPOConfig,
    tokenizer: Any,
) -> dict[str, float]:
    """One PPO training step; returns its metrics (:data:`METRICS` and the rollout's)."""
    started = time.perf_counter()
    # 1. rollout (under FSDP the weights are gathered, so each process samples on its own)
    with session.generation_mode(POLICY):
        trajectories = engine.collect(seeds.take(config.prompts_per_step), config.group_size)
    rollout_s = time.perf_counter() - started
    batch = collate(trajectories, tokenizer.pad_token_id, device=session.device)
    session.check_finite(batch.rewards, "rewards (as returned by the env)")

    # 3. the critic's values (and, if asked, the policy's log-probs) at sampling time, and the
    # reference's log-probs that step 2 needs
    def sampled(rows: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
        scored = score(session.models[POLICY], session.models.get(CRITIC), rows, config.temperature)
        return scored.logprobs, scored.values

    sampled_logprobs, values = chunked_without_grad(session, batch, config.micro_batch_size, sampled)
    old_values = torch.where(batch.mask.bool(), values, torch.zeros_like(values))
    if config.recompute_old_logprobs:
        batch = batch.replace(old_logprobs=sampled_logprobs)
    ref_logprobs = None
    if REFERENCE in session.frozen:
        reference, temperature = session.frozen[REFERENCE], config.temperature or 1.0
        (ref_logprobs,) = chunked_without_grad(
            session,
            batch,
            config.micro_batch_size,
            lambda rows: (
                token_logprobs(reference, rows.input_ids, rows.attention_mask, rows.mask, temperature),
            ),
        )

    # 2. rewards on tokens
    if batch.token_rewards is None:
        raise ValueError("PPO needs per-token rewards: build the batch with collate()")
    rewards = rewards_on_actions(batch.token_rewards, batch.mask) * batch.mask
    if config.reward_clip > 0:
        rewards = clip_rewards(rewards, config.reward_clip)
    if config.reward_scaling:
        rewards = rewards / max(global_std(session, rewards.sum(dim=1)), 1e-8)
    kl_coef = kl_control.coef
    kl = torch.zeros_like(rewards)
    if ref_logprobs is not None:
        penalised, kl = kl_penalised_rewards(rewards, batch.old_logprobs, ref_logprobs, batch.mask, kl_coef)
        if config.kl_in == "reward":
            rewards = penalised

    # 4. advantages
    advantages, returns = gae(rewards, old_values, batch.mask, gamma=config.gamma, lam=config.lam)
    if config.whiten_advantages:
        advantages = global_whiten(session, advantages, batch.mask)

    # 5. update: ppo_epochs passes of shuffled mini-batches, as one training step
    with_entropy = config.entropy_coef > 0

    def loss_fn(micro: RolloutBatch, rows: Rows, norms: Normalisers) -> tuple[torch.Tensor, dict[str, float]]:
        return ppo_loss(
            score(
                session.models[POLICY],
                session.models.get(CRITIC),
                micro,
                config.temperature,
                with_entropy=with_entropy,
            ),
            micro,
            advantages=advantages[rows],
            returns=returns[rows],
            old_values=old_values[rows],
            ref_logprobs=ref_logprobs[rows] if ref_logprobs is not None else None,
            config=config,
            num_tokens=norms.num_tokens,
        )

    result = update(
        session,
        batch,
        loss_fn,
        micro_batch_size=config.micro_batch_size,
        num_iterations=config.ppo_epochs,
        mini_batch_size=config.mini_batch_size,
        shuffle=epoch_shuffle(session),
        stop=kl_stop(config.target_kl),
    )

    # 6. the adaptive KL coefficient follows the replies' KL
    tokens = result.normalisers.global_tokens
    mean_kl_per_reply = session.all_reduce_mean(float(kl.sum(dim=1).mean()))
    if config.kl_target > 0 and ref_logprobs is not None:
        kl_control.update(mean_kl_per_reply, int(result.normalisers.global_sequences))

    mask = batch.mask
    elapsed = time.perf_counter() - started
    metrics = {
        "reward": session.all_reduce_mean(float(batch.rewards.mean())),
        "loss": result.loss,
        **result.extras,
        "value/mean": global_token_mean(session, old_values, mask),
        "value/explained_variance": global_explained_variance(session, old_values, returns, mask),
        "returns/mean": global_token_mean(session, returns, mask),
        "kl": global_token_mean(session, kl, mask),
        "kl_coef": kl_coef,
        "epochs": float(result.iterations),
        "grad_norm": result.grad_norm,
        "lr": result.lr,
        "tokens": tokens,
        "tokens_per_s": tokens / max(elapsed, 1e-9),
        "step_s": elapsed,
        "rollout_s": rollout_s,
    }
    optimizer = {k: v for k, v in result.optimizer.items() if "/" in k}
    return {**metrics, **rollout_metrics(session, trajectories), **optimizer}


def epoch_shuffle(session: TrainingSession) -> torch.Generator:
    """The generator that orders a step's mini-batches: reproducible from the run's seed, the step
    and the process, so a resumed run shuffles as the uninterrupted one did."""
    return torch.Generator().manual_seed(session.seed * 7_919 + session.step * 104_729 + session.rank)


def kl_stop(target_kl: float) -> StopFn | None:
    """Stop a step's epochs once a pass's approximate KL exceeds ``target_kl``; None when it is 0."""
    if target_kl <= 0:
        return None
    return lambda extras: extras["policy/approx_kl"] > target_kl


def global_token_mean(session: TrainingSession, values: torch.Tensor, mask: torch.Tensor) -> float:
    """The mean of ``values`` over the masked tokens of every process."""
    local = (float((values * mask).sum()), float(mask.sum()))
    gathered = session.gather_object(local) if session.world_size > 1 else [local]
    return sum(g[0] for g in gathered) / max(sum(g[1] for g in gathered), 1.0)


def global_moments(session: TrainingSession, values: torch.Tensor) -> tuple[float, float, float]:
    """Count, mean and std (without Bessel's correction) of ``values`` over every process's.
    Collective.

    In float64 and in two passes (the global mean, then the squared deviations from it): the one-pass
    ``E[x^2] - E[x]^2`` loses every digit of the spread once the mean is large beside it (returns
    of 1000 +- 0.05 have a float32 std of 0 that way)."""
    x = values.detach().double().flatten()
    local = (float(x.sum()), float(x.numel()))
    gathered = session.gather_object(local) if session.world_size > 1 else [local]
    total, count = sum(g[0] for g in gathered), sum(g[1] for g in gathered)
    if count == 0:
        return 0.0, 0.0, 0.0
    mean = total / count
    deviations = float(((x - mean) ** 2).sum())
    squares = sum(session.gather_object(deviations)) if session.world_size > 1 else deviations
    return count, mean, (squares / count) ** 0.5


def global_std(session: TrainingSession, values: torch.Tensor) -> float:
    """The std of ``values`` over every process's (see :func:`global_moments`). Collective."""
    return global_moments(session, values)[2]


def global_whiten(session: TrainingSession, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``values`` shifted and scaled to mean 0 and std 1 over the masked tokens of every process
    (moments by :func:`global_moments`), 0 off the mask. Collective."""
    count, mean, std = global_moments(session, values[mask.bool()])
    if count < 2:
        return values * mask
    return ((values.double() - mean) / (std + 1e-8) * mask).to(values.dtype)


def global_explained_variance(
    session: TrainingSession, values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor
) -> float:
    """:func:`~mrlm.train.ops.value_loss.explained_variance` over the masked tokens of every
    process (as if one process held them all), from each process's moments. Collective."""
    selected = mask.bool()
    target = returns.detach().double()[selected]
    residual = target - values.detach().double()[selected]
    local = [
        float(target.numel()),
        float(target.sum()),
        float((target**2).sum()),
        float(residual.sum()),
        float((residual**2).sum()),
        max(float(target.abs().max()), float(values.detach()[selected].abs().max()))
        if target.numel()
        else 0.0,
    ]
    gathered = session.gather_object(local) if session.world_size > 1 else [local]
    count, t_sum, t_squares, r_sum, r_squares = (sum(g[i] for g in gathered) for i in range(5))
    scale = max(g[5] for g in gathered)
    if count == 0:
        return float("nan")
    variance = t_squares / count - (t_sum / count) ** 2
    # As explained_variance: returns that differ only by rounding do not vary.
    if variance <= (1e-6 * scale) ** 2:
        return float("nan")
    return 1.0 - (r_squares / count - (r_sum / count) ** 2) / variance
