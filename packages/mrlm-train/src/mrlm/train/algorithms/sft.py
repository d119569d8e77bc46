"""SFT: supervised fine-tuning on chats, prompt/completion pairs or recorded trajectories.

Next-token cross-entropy on the target tokens of each example (the model's replies, the
environment's turns, or both; see :mod:`mrlm.train.sft`), in four phases:

1. **data**: read the source, filter trajectories by reward, mark targets, truncate to
   ``max_length``; the run lasts ``run.max_steps`` optimizer steps, or ``epochs`` passes;
2. **order**: each epoch is a permutation of the examples seeded by ``(run.seed, epoch)``, and
   batches of ``batch_size`` examples run across epoch ends, so a single cursor (examples served so
   far) says where the data stream stands, and resuming continues it exactly;
3. **update**: the batch is split over processes, then into micro-batches (padded rows, or rows
   packed to ``max_length`` tokens), and the loss is::

       L = sum over target tokens of -log p(token | tokens before it) / (target tokens in the batch)

   with the normaliser counted over the whole batch of every process, so micro-batching and the
   number of processes do not change the update;
4. **logging** and checkpoints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from mrlm.train.config_io import check_values
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.config import check_no_accumulation
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.setting_checks import check_counts
from mrlm.train.sft import (
    PackedAttention,
    SFTBatch,
    SFTDataError,
    SFTExample,
    Target,
    collate_packed,
    collate_padded,
    load_sft_examples,
    pack_examples,
    sft_loss,
)
from mrlm.train.sft.sources import check_has_records, check_source

#: Steps of a run that sets neither ``run.max_steps`` nor ``epochs``.
DEFAULT_MAX_STEPS = 100


@dataclass
class SFTConfig:
    """Everything one SFT run needs: flags on the command line, or --config FILE (YAML, the same keys)."""

    data: str
    """JSONL file of chats ("messages"), prompt/completion pairs or trajectories (format found per line)."""
    target: Target = "assistant"
    """Tokens the loss applies to: the model's replies, the environment's turns (a world model), or both."""
    min_reward: float | None = None
    """Keep only trajectories whose total reward is at least this (rejection sampling); None keeps all."""
    max_length: int = 1024
    """Examples are cut to their first max_length tokens; with packing, the length of a packed row."""
    packing: bool = False
    """Pack several examples into each row of max_length tokens instead of padding one example per row."""
    packed_attention: PackedAttention = "block"
    """How packed examples are kept apart: a block-diagonal mask, or restarting position_ids only."""
    batch_size: int = 32
    """Examples per optimizer step, over all processes."""
    micro_batch_size: int = 8
    """Rows per forward/backward pass: examples when padding, packed rows when packing."""
    epochs: float | None = None
    """Passes over the data; when set, it decides run.max_steps (ceil(epochs * examples / batch_size)), and a max_steps given too is not used."""
    shuffle: bool = True
    """Visit the examples of each epoch in a seeded random order (else in file order)."""
    model: ModelConfig = field(default_factory=lambda: ModelConfig(name_or_path="tiny"))
    """The model: a Hugging Face model name or path, or "tiny" for a small local model."""

    run: RunConfig = field(
        default_factory=lambda: RunConfig(output_dir="runs/sft", max_steps=DEFAULT_MAX_STEPS)
    )
    """Output directory, steps, seed, checkpoints, logging."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(learning_rate=1e-5))
    """Optimizer and learning-rate schedule."""
    dist: DistributedConfig = field(default_factory=DistributedConfig)
    """DDP/FSDP, mixed precision (micro-batching is set by micro_batch_size)."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if not self.data:
            raise ValueError("data must name a JSONL file of examples")
        if self.max_length < 2:
            raise ValueError(
                f"max_length must be at least 2 (a target needs a token before it), got {self.max_length}"
            )
        check_counts(batch_size=self.batch_size, micro_batch_size=self.micro_batch_size)
        if not self.packing and self.micro_batch_size > self.batch_size:
            raise ValueError(
                f"micro_batch_size ({self.micro_batch_size}) is larger than batch_size ({self.batch_size})"
            )
        if self.epochs is not None and not (math.isfinite(self.epochs) and self.epochs > 0):
            raise ValueError(
                f"epochs must be a finite number > 0 (or None to use run.max_steps), got {self.epochs}"
            )
        if self.min_reward is not None and not math.isfinite(self.min_reward):
            # nan keeps no trajectory, infinity none or all: never what was meant
            raise ValueError(
                f"min_reward must be finite (or None to keep every trajectory), got {self.min_reward}"
            )
        check_no_accumulation(self.dist, "SFT splits each batch into micro-batches of micro_batch_size")


@dataclass
class StepStats:
    """What one optimizer step reports (also the keys of metrics.jsonl)."""

    loss: float
    """Mean cross-entropy per target token of the batch."""
    accuracy: float
    """Share of target tokens the model's argmax predicts."""
    tokens: float
    """Target tokens in the batch, over all processes."""
    epoch: float
    """Passes over the data so far (fractional)."""
    grad_norm: float
    lr: float
    tokens_per_s: float


class EpochSampler:
    """Batches of example indices, resumable from one integer.

    The stream is epoch 0's order, then epoch 1's, and so on; epoch ``e`` is a permutation seeded
    by ``(seed, e)`` (the identity without shuffling). :meth:`next_batch` takes the next
    ``batch_size`` indices of the stream, crossing epoch ends, and :attr:`cursor` counts the
    indices taken, so a sampler given the same cursor continues with the same batches.
    """

    def __init__(self, num_examples: int, batch_size: int, *, seed: int, shuffle: bool = True) -> None:
        if num_examples < 1:
            raise ValueError("there are no examples to train on")
        self.num_examples, self.batch_size = num_examples, batch_size
        self.seed, self.shuffle = seed, shuffle
        self.cursor = 0
        self._order: tuple[int, list[int]] = (-1, [])

    @property
    def epoch(self) -> float:
        """Passes over the data so far."""
        return self.cursor / self.num_examples

    def next_batch(self) -> list[int]:
        batch: list[int] = []
        while len(batch) < self.batch_size:
            epoch, start = divmod(self.cursor, self.num_examples)
            take = min(self.batch_size - len(batch), self.num_examples - start)
            batch.extend(self._epoch_order(epoch)[start : start + take])
            self.cursor += take
        return batch

    def _epoch_order(self, epoch: int) -> list[int]:
        if self._order[0] != epoch:
            if self.shuffle:
                rng = np.random.default_rng([self.seed, epoch])
                order = [int(i) for i in rng.permutation(self.num_examples)]
            else:
                order = list(range(self.num_examples))
            self._order = (epoch, order)
        return self._order[1]


def steps_for(config: SFTConfig, num_examples: int) -> int:
    """Optimizer steps of the run: from ``epochs`` when set, else ``run.max_steps``."""
    if config.epochs is None:
        return config.run.max_steps
    return max(1, math.ceil(config.epochs * num_examples / config.batch_size))


def train(config: SFTConfig) -> Path:
    """Run SFT as configured; return the directory of the final model (``save_pretrained`` format)."""
    check_output_dir(config.run.output_dir)  # before the model loads, which may take minutes
    check_source(config.data, SFTDataError)  # so is a data path that names no file
    check_has_records(config.data, SFTDataError)  # or an empty file
    # 1. data
    model, tokenizer = load_policy(config.model, seed=config.run.seed)
    examples, report = load_sft_examples(
        config.data,
        tokenizer,
        target=config.target,
        max_length=config.max_length,
        min_reward=config.min_reward,
        # The model's rows, not len(tokenizer): embeddings padded past the tokenizer's tokens (as
        # Qwen's are) can be sampled, so collected trajectories may hold those ids.
        vocab_size=model.get_input_embeddings().num_embeddings,
    )
    print(f"SFT data: {report.summary()}")
    if not examples:
        raise SFTDataError(f"no example of {config.data} is left to train on: {report.summary()}")
    steps = steps_for(config, len(examples))
    if config.epochs is not None and config.run.max_steps not in (steps, DEFAULT_MAX_STEPS):
        # A max_steps given with epochs (a flag over a config file that sets epochs) is not used.
        print(
            f"SFT: epochs={config.epochs:g} decides the run's length, {steps} steps; "
            f"run.max_steps={config.run.max_steps} is not used (leave epochs unset to set the steps)"
        )
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, max_steps=steps))

    with TrainingSession.for_config(config, model) as session:
        train_on_examples(session, examples, config, pad_token_id=tokenizer.pad_token_id)
        return session.save_final(tokenizer)


def train_on_examples(
    session: TrainingSession, examples: Sequence[SFTExample], config: SFTConfig, *, pad_token_id: int
) -> None:
    """Phases 2-4 on examples already in memory, until ``session.run.max_steps``.

    Resumes from ``session.run.resume`` when set; the caller saves the final model. ``config.data``,
    ``target``, ``min_reward`` and ``epochs`` are not read here: the examples are given and the
    session's ``run.max_steps`` is the length of the run. Every process must pass the same examples.
    """
    if config.batch_size < session.world_size:
        raise ValueError(
            f"batch_size ({config.batch_size}) must be at least the number of processes ({session.world_size})"
        )
    if any(example.num_targets == 0 for example in examples):
        raise ValueError("every example needs at least one target token (load_sft_examples drops the others)")
    if config.packing:
        longest = max(len(example) for example in examples)
        if longest > config.max_length:
            raise ValueError(f"an example has {longest} tokens, more than max_length={config.max_length}")
    # The order must agree across processes: it comes from the run's seed, not the per-process one.
    sampler = EpochSampler(len(examples), config.batch_size, seed=session.seed, shuffle=config.shuffle)
    state = session.restore()
    if state:
        sampler.cursor = int(state["cursor"])
    while session.step < session.run.max_steps:
        batch = [examples[i] for i in sampler.next_batch()]
        stats = train_step(session, batch, config, pad_token_id=pad_token_id, epoch=sampler.epoch)
        session.log(dataclasses.asdict(stats))
        session.maybe_save({"cursor": sampler.cursor})


def train_step(
    session: TrainingSession,
    batch: Sequence[SFTExample],
    config: SFTConfig,
    *,
    pad_token_id: int,
    epoch: float = 0.0,
) -> StepStats:
    """Phase 3: one optimizer step on ``batch``, the same global batch on every process."""
    started = time.perf_counter()
    # This process's share, then its micro-batches.
    share = list(batch[session.rank :: session.world_size])
    micro_batches = _micro_batches(share, config, pad_token_id, _dtype(session.unwrapped_model))
    counts = [len(micro_batches)]
    if session.world_size > 1:
        # FSDP gathers parameters in every forward: every process must run as many as the others.
        counts = session.gather_object(len(micro_batches))
    local_tokens = sum(micro.num_targets for micro in micro_batches)
    global_tokens = session.all_reduce_mean(local_tokens) * session.world_size
    # DDP/FSDP average gradients over processes, so each process divides by its share of the count.
    normaliser = global_tokens / session.world_size

    loss_sum = correct = 0.0
    steps = max(counts)
    for i in range(steps):
        # A process with fewer micro-batches repeats its first one with weight 0: no gradient,
        # but the collectives of its forward and backward match the other processes'.
        micro, weight = (micro_batches[i], 1.0) if i < len(micro_batches) else (micro_batches[0], 0.0)
        micro = micro.to(session.device)
        last = i == steps - 1
        with contextlib.nullcontext() if last else session.no_sync():
            logits = session.model(**micro.model_inputs()).logits
            loss, stats = sft_loss(logits, micro.input_ids, micro.labels_mask, num_tokens=normaliser)
            session.backward(loss * weight)
        loss_sum += float(loss.detach()) * weight
        correct += stats.correct * weight
    update = session.optimizer_step()

    elapsed = time.perf_counter() - started
    return StepStats(
        loss=session.all_reduce_mean(loss_sum),
        accuracy=session.all_reduce_mean(correct) * session.world_size / global_tokens,
        tokens=global_tokens,
        epoch=epoch,
        grad_norm=update["grad_norm"],
        lr=update["lr"],
        tokens_per_s=global_tokens / max(elapsed, 1e-9),
    )


def _micro_batches(
    examples: list[SFTExample], config: SFTConfig, pad_token_id: int, dtype: torch.dtype
) -> list[SFTBatch]:
    """Padded micro-batches of ``micro_batch_size`` examples, or packed ones of as many rows."""
    size = config.micro_batch_size
    if not config.packing:
        return [collate_padded(examples[i : i + size], pad_token_id) for i in range(0, len(examples), size)]
    bins = pack_examples([len(example) for example in examples], config.max_length)
    rows = [[examples[i] for i in indices] for indices in bins]
    return [
        collate_packed(rows[i : i + size], pad_token_id, attention=config.packed_attention, dtype=dtype)
        for i in range(0, len(rows), size)
    ]


def _dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of the model's floating-point weights (the packed attention mask must match it)."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
