"""DPO: direct preference optimisation on pairs of a chosen and a rejected reply.

Rafailov et al. 2023, with the losses of :mod:`mrlm.train.dpo.losses`. For a prompt ``x`` with
replies ``y_c`` (chosen) and ``y_r`` (rejected), the policy ``pi`` and a frozen reference
``pi_ref``::

    s_c = log pi(y_c | x) - log pi_ref(y_c | x)        (summed over the reply's tokens,
    s_r = log pi(y_r | x) - log pi_ref(y_r | x)         or divided by its length: length_normalize)
    sigmoid: L = -log sigmoid(beta (s_c - s_r))          (and hinge, ipo, robust)

averaged over the pairs of the global batch. The run, in four phases:

1. **data**: preference records (TRL's standard or conversational forms, explicit or implicit
   prompt; :mod:`mrlm.train.dpo.data`) tokenized and cut to ``max_length`` tokens per side;
2. **reference** (``reference``): ``"model"`` keeps a frozen copy of the initial policy (or of
   ``reference_model``) on the session, sharded under FSDP, and scores every micro-batch with it;
   a LoRA policy's reference is the policy with its adapters off (no copy);
   ``"precomputed"`` scores every pair once before the first step (with the initial policy itself,
   or ``reference_model`` loaded for that pass only) and keeps the numbers, in memory and in every
   checkpoint, so no second model stays loaded; records that carry ``ref_chosen_logps`` and
   ``ref_rejected_logps`` skip the pass. ``"none"`` is reference-free: ``log pi_ref = 0``;
3. **update**: batches of ``batch_size`` pairs in a seeded order per epoch, resumable from one cursor
   (as SFT's); each process takes its share and runs it in micro-batches of ``micro_batch_size``
   pairs (chosen and rejected rows in one forward), the loss divided by the global pair count, so
   micro-batching and the number of processes do not change the update;
4. **logging** with TRL's metric names (``rewards/chosen``, ``rewards/rejected``, ``rewards/margins``,
   ``rewards/accuracies``, ``logps/chosen``, ``logps/rejected``) and checkpoints.

:func:`preference_step` (phase 3 on given pairs) is shared with online DPO
(:mod:`mrlm.train.algorithms.online_dpo`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from mrlm.train.algorithms.sft import EpochSampler
from mrlm.train.config_io import check_values
from mrlm.train.dpo import (
    LossType,
    PairBatch,
    PreferenceDataError,
    PreferencePair,
    collate_pairs,
    load_preference_pairs,
    pair_scores,
    preference_loss,
)
from mrlm.train.dpo.losses import PER_TOKEN_LOSSES, chosen_nll
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.config import check_no_accumulation
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.setting_checks import check_counts, check_non_negative, check_positive
from mrlm.train.sft.sources import Source, check_has_records, check_source

#: The frozen reference policy's name in the session.
REFERENCE = "reference"
Reference = Literal["model", "precomputed", "none"]

#: What each step logs, in TRL's names where TRL has one.
METRICS: dict[str, str] = {
    "loss": "mean preference loss per pair",
    "rewards/chosen": "mean beta * s_c (implicit reward of the chosen reply; sequence log-ratio)",
    "rewards/rejected": "mean beta * s_r",
    "rewards/margins": "mean beta * (s_c - s_r)",
    "rewards/accuracies": "share of pairs with s_c > s_r",
    "logps/chosen": "mean log-prob of the chosen reply under the policy",
    "logps/rejected": "mean log-prob of the rejected reply under the policy",
    "pairs": "pairs in the batch, over all processes",
    "grad_norm": "gradient norm before clipping",
    "lr": "learning rate",
    "step_s": "seconds of the step",
}


@dataclass
class PreferenceSettings:
    """What offline and online DPO share: the loss, the reference, micro-batching and the model."""

    loss_type: LossType = "sigmoid"
    """sigmoid (DPO), ipo, hinge (SLiC) or robust (label noise; see label_smoothing)."""
    beta: float = 0.1
    """Strength of the pull toward the reference (the implicit reward's scale)."""
    label_smoothing: float = 0.0
    """robust only: the assumed probability that a pair's labels are flipped, in [0, 0.5)."""
    length_normalize: bool = False
    """Divide each reply's log-ratio by its token count (ipo always does)."""
    sft_weight: float = 0.0
    """Weight of the chosen replies' per-token negative log-likelihood added to each pair's loss (RPO)."""
    reference: Reference = "model"
    """A frozen reference model on the session, log-probs computed once before training, or none."""
    reference_model: str = ""
    """The reference's name or path; empty: the initial policy."""
    max_length: int = 1024
    """Tokens kept per sequence (prompt + reply), from the start."""
    micro_batch_size: int = 4
    """Pairs per forward/backward pass (twice as many rows)."""
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="tiny"))
    """The policy: a Hugging Face model name or path, or "tiny" for a small local model."""
    run: RunConfig = field(default_factory=lambda: RunConfig(output_dir="runs/dpo", max_steps=100))
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=5e-7))
    """Optimizer and learning-rate schedule."""
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    """DDP/FSDP, mixed precision (micro-batching is set by micro_batch_size)."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        check_positive(beta=self.beta)
        if self.loss_type == "robust" and not 0.0 <= self.label_smoothing < 0.5:
            raise ValueError(f"robust needs 0 <= label_smoothing < 0.5, got {self.label_smoothing}")
        if self.loss_type != "robust" and self.label_smoothing != 0.0:
            raise ValueError(f"label_smoothing applies to loss_type='robust' only, not {self.loss_type!r}")
        if self.reference == "none" and self.reference_model:
            raise ValueError("reference='none' is reference-free: leave reference_model empty")
        check_non_negative(sft_weight=self.sft_weight)  # nan or inf would only surface as the loss
        if self.max_length < 2:
            raise ValueError(f"max_length must be at least 2, got {self.max_length}")
        check_counts(micro_batch_size=self.micro_batch_size)
        check_no_accumulation(self.dist, "DPO splits each batch into micro-batches of micro_batch_size")


@dataclass
class DPOConfig(PreferenceSettings):
    """Everything one DPO run needs: flags on the command line, or --config FILE (YAML, the same keys)."""

    data: str = ""
    """JSONL file of preference records (prompt/chosen/rejected; see mrlm.train.dpo.data)."""
    batch_size: int = 32
    """Pairs per optimizer step, over all processes."""
    epochs: float | None = None
    """Passes over the pairs; when set, it decides run.max_steps (ceil(epochs * pairs / batch_size))."""
    shuffle: bool = True
    """Visit the pairs of each epoch in a seeded random order (else in file order)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(batch_size=self.batch_size)
        if self.micro_batch_size > self.batch_size:
            raise ValueError(
                f"micro_batch_size ({self.micro_batch_size}) is larger than batch_size ({self.batch_size})"
            )
        if self.epochs is not None and not self.epochs > 0:
            raise ValueError(f"epochs must be positive (or None to use run.max_steps), got {self.epochs}")


def train(config: DPOConfig, data: Source | None = None) -> Path:
    """Run DPO as configured; return the directory of the final model (``save_pretrained`` format).

    ``data`` (a list of records or a Hugging Face dataset) replaces ``config.data``.

    Raises:
        PreferenceDataError: a record is unusable, no pair is left, or only some pairs carry
            reference log-probs.
    """
    if data is None and not config.data:
        raise PreferenceDataError("no data: set data to a JSONL file of preference records")
    check_output_dir(config.run.output_dir)  # before the model loads, which may take minutes
    source = config.data if data is None else data
    check_source(source, PreferenceDataError)  # so is a data path that names no file
    check_has_records(source, PreferenceDataError)  # or an empty file
    # 1. data
    model, tokenizer = load_policy(config.model, seed=config.run.seed)
    pairs, report = load_preference_pairs(source, tokenizer, max_length=config.max_length)
    print(f"DPO data: {report.summary()}")
    if not pairs:
        raise PreferenceDataError(f"no preference pair is left to train on: {report.summary()}")
    if 0 < report.with_reference < len(pairs):
        raise PreferenceDataError(
            f"{report.with_reference} of {len(pairs)} pairs carry ref_chosen_logps/ref_rejected_logps; "
            "give them for every pair or for none"
        )
    if report.with_reference and config.reference != "precomputed":
        raise PreferenceDataError(
            f"the records carry reference log-probs, which reference={config.reference!r} would ignore; "
            "use reference='precomputed'"
        )
    steps = config.run.max_steps
    if config.epochs is not None:
        steps = max(1, math.ceil(config.epochs * len(pairs) / config.batch_size))
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, max_steps=steps))

    # 2. reference: a frozen model for the whole run, or for the one scoring pass
    # "precomputed" without reference_model scores the pairs with the policy itself, before its first update.
    scoring_model = (
        config.reference == "precomputed" and bool(config.reference_model) and not report.with_reference
    )
    copy = (config.reference == "model" and not adapters_off(config)) or scoring_model
    frozen = {REFERENCE: load_reference(config)} if copy else {}

    with TrainingSession.for_config(config, model, frozen=frozen) as session:
        if config.batch_size < session.world_size:
            raise ValueError(
                f"batch_size ({config.batch_size}) must be at least the number of processes ({session.world_size})"
            )
        pad = tokenizer.pad_token_id
        state = session.restore()
        scores: torch.Tensor | None = None
        if config.reference == "precomputed":
            if state and "reference_logps" in state:
                scores = state["reference_logps"]
            elif report.with_reference:
                scores = torch.tensor([[p.ref_chosen_logp, p.ref_rejected_logp] for p in pairs])
            else:
                scorer = session.frozen.get(REFERENCE, session.model)
                scores = score_pairs(session, scorer, pairs, config.micro_batch_size, pad)
            session.frozen.pop(REFERENCE, None)  # the pass is done: free the model
            pairs = [
                pair.with_reference(float(c), float(r))
                for pair, (c, r) in zip(pairs, scores.tolist(), strict=True)
            ]
        reference = reference_for(config, session)
        extra: dict[str, Any] = {} if scores is None else {"reference_logps": scores}

        # 3-4. update and logging
        sampler = EpochSampler(len(pairs), config.batch_size, seed=session.seed, shuffle=config.shuffle)
        if state:
            sampler.cursor = int(state["cursor"])
        while session.step < session.run.max_steps:
            batch = [pairs[i] for i in sampler.next_batch()]
            share = batch[session.rank :: session.world_size]
            metrics = preference_step(session, share, config, pad_token_id=pad, reference=reference)
            session.log({**metrics, "epoch": sampler.epoch})
            session.maybe_save({"cursor": sampler.cursor, **extra})
        return session.save_final(tokenizer)


def adapters_off(config: PreferenceSettings) -> bool:
    """Whether the reference is the LoRA policy with its adapters turned off (its starting point,
    without a second copy): reference "model", no reference_model, and a policy with adapters."""
    return config.reference == "model" and not config.reference_model and config.model.lora_r > 0


def reference_for(config: PreferenceSettings, session: TrainingSession) -> torch.nn.Module | None:
    """The model that scores the reference log-probs during training, if any."""
    if adapters_off(config):
        return AdaptersOff(session.unwrapped_model)
    return session.frozen.get(REFERENCE)


class AdaptersOff(torch.nn.Module):
    """A peft policy with its adapters turned off and in eval mode: the base model it started from.

    Holds no parameters of its own (the policy is not registered as a submodule), so nothing of it is
    placed, sharded or saved twice. Leaving peft's ``disable_adapter`` can leave the adapters frozen;
    their ``requires_grad`` is restored after every call.
    """

    def __init__(self, policy: Any) -> None:
        super().__init__()
        object.__setattr__(self, "policy", policy)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        policy: Any = self.__dict__["policy"]
        trainable = [p for p in policy.parameters() if p.requires_grad]
        was_training = policy.training
        policy.eval()
        try:
            with policy.disable_adapter():
                return policy(*args, **kwargs)
        finally:
            policy.train(was_training)
            for parameter in trainable:
                parameter.requires_grad_(True)


def load_reference(config: PreferenceSettings) -> Any:
    """The reference model: ``reference_model`` when set, else a fresh copy of the initial policy."""
    if not config.reference_model:
        return load_policy(config.model, seed=config.run.seed)[0]
    return load_policy(
        dataclasses.replace(
            config.model, name_or_path=config.reference_model, lora_r=0, lora_target_modules=None
        )
    )[0]


def preference_step(
    session: TrainingSession,
    pairs: Sequence[PreferencePair],
    config: PreferenceSettings,
    *,
    pad_token_id: int,
    reference: torch.nn.Module | None,
) -> dict[str, float]:
    """Phase 3: one optimizer step on this process's ``pairs``; returns the step's metrics.

    Pairs use their own reference log-probs when they all carry them, else ``reference``'s, else
    none (reference-free). Every process must call it, each with its share of the global batch.
    """
    started = time.perf_counter()
    micro_batches = [
        collate_pairs(pairs[i : i + config.micro_batch_size], pad_token_id)
        for i in range(0, len(pairs), config.micro_batch_size)
    ]
    counts = [len(micro_batches)]
    if session.world_size > 1:
        # FSDP gathers parameters in every forward: every process must run as many as the others.
        counts = session.gather_object(len(micro_batches))
    global_pairs = session.all_reduce_mean(float(len(pairs))) * session.world_size
    if global_pairs == 0:
        raise ValueError("the batch holds no preference pair")
    # DDP/FSDP average gradients over processes, so each process divides by its share of the count.
    normaliser = global_pairs / session.world_size

    totals: dict[str, float] = {}
    steps = max(counts)
    for i in range(steps):
        # A process with fewer micro-batches repeats its first one with weight 0 (see SFT).
        micro, weight = (micro_batches[i], 1.0) if i < len(micro_batches) else (micro_batches[0], 0.0)
        micro = micro.to(session.device)
        ref_logps = reference_logps(micro, reference)
        with contextlib.nullcontext() if i == steps - 1 else session.no_sync():
            logps = sequence_logps(session.model, micro)
            loss_sum, sums = dpo_loss(logps, ref_logps, micro.lengths, config)
            session.backward(loss_sum * (weight / normaliser))
        for name, value in sums.items():
            totals[name] = totals.get(name, 0.0) + value * weight
    update = session.optimizer_step()

    metrics = {
        name: session.all_reduce_mean(value) * session.world_size / global_pairs
        for name, value in totals.items()
    }
    return {
        **metrics,
        "pairs": global_pairs,
        "grad_norm": update["grad_norm"],
        "lr": update["lr"],
        "step_s": time.perf_counter() - started,
    }


def sequence_logps(model: Any, batch: PairBatch) -> torch.Tensor:
    """``[2P]`` float32 log-prob of each row's reply under ``model`` (gradients flow)."""
    return token_logprobs(model, batch.input_ids, batch.attention_mask, batch.completion_mask).sum(dim=1)


def reference_logps(batch: PairBatch, reference: torch.nn.Module | None) -> torch.Tensor:
    """``[2P]`` the reference's log-probs: carried by the batch, scored by ``reference``, or zeros."""
    if batch.ref_logps is not None:
        return batch.ref_logps
    if reference is None:
        return torch.zeros(batch.input_ids.shape[0], dtype=torch.float32, device=batch.input_ids.device)
    with torch.no_grad():
        return sequence_logps(reference, batch)


def dpo_loss(
    logps: torch.Tensor, ref_logps: torch.Tensor, lengths: torch.Tensor, config: PreferenceSettings
) -> tuple[torch.Tensor, dict[str, float]]:
    """The summed loss of ``P`` pairs (rows: chosen then rejected) and the sums behind the metrics."""
    chosen, rejected = logps.chunk(2)
    ref_chosen, ref_rejected = ref_logps.chunk(2)
    chosen_len, rejected_len = lengths.chunk(2)
    per_token = config.length_normalize or config.loss_type in PER_TOKEN_LOSSES
    scores = pair_scores(
        chosen, rejected, ref_chosen, ref_rejected, chosen_len, rejected_len, per_token=per_token
    )
    losses = preference_loss(
        config.loss_type, scores, beta=config.beta, label_smoothing=config.label_smoothing
    )
    if config.sft_weight:
        losses = losses + config.sft_weight * chosen_nll(chosen, chosen_len)
    with torch.no_grad():  # implicit rewards from sequence log-ratios, as TRL reports them
        rewards_chosen = config.beta * (chosen - ref_chosen)
        rewards_rejected = config.beta * (rejected - ref_rejected)
        sums = {
            "loss": float(losses.sum()),
            "rewards/chosen": float(rewards_chosen.sum()),
            "rewards/rejected": float(rewards_rejected.sum()),
            "rewards/margins": float((rewards_chosen - rewards_rejected).sum()),
            "rewards/accuracies": float((rewards_chosen > rewards_rejected).float().sum()),
            "logps/chosen": float(chosen.sum()),
            "logps/rejected": float(rejected.sum()),
        }
    return losses.sum(), sums


def score_pairs(
    session: TrainingSession,
    model: Any,
    pairs: Sequence[PreferencePair],
    micro_batch_size: int,
    pad_token_id: int,
) -> torch.Tensor:
    """``[P, 2]`` log-probs of every pair's chosen and rejected reply under ``model`` in eval mode,
    each process scoring every world_size-th pair; every process gets all of them."""
    mine = list(range(session.rank, len(pairs), session.world_size))
    chunks = [mine[i : i + micro_batch_size] for i in range(0, len(mine), micro_batch_size)]
    # Under FSDP the forward is collective: every process runs as many as the process with the most.
    rounds = max(session.gather_object(len(chunks))) if session.world_size > 1 else len(chunks)
    found: dict[int, tuple[float, float]] = {}
    was_training = model.training
    model.eval()  # a reference has no dropout, and scoring draws nothing from the training's random streams
    try:
        for k in range(rounds):
            indices = chunks[k] if k < len(chunks) else chunks[0] if chunks else [0]
            batch = collate_pairs([pairs[i] for i in indices], pad_token_id).to(session.device)
            with torch.no_grad():
                chosen, rejected = sequence_logps(model, batch).float().cpu().chunk(2)
            if k < len(chunks):
                found.update(zip(indices, zip(chosen.tolist(), rejected.tolist(), strict=True), strict=True))
    finally:
        model.train(was_training)
    if session.world_size > 1:
        for part in session.gather_object(found):
            found.update(part)
    return torch.tensor([found[i] for i in range(len(pairs))], dtype=torch.float32)
