"""The settings of a training run: optimisation, distribution and bookkeeping.

Three flat dataclasses that algorithms nest in their own config, so every algorithm gets the same
``--optim.*``, ``--dist.*`` and ``--run.*`` flags from tyro (each field's docstring is its help
text). Values are checked when constructed: a bad value fails before any model is loaded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from mrlm.train.config_io import check_values

LrSchedule = Literal["constant", "linear", "cosine"]
Strategy = Literal["auto", "single", "ddp", "fsdp"]
MixedPrecision = Literal["no", "bf16", "fp16"]

LR_SCHEDULES: tuple[str, ...] = ("constant", "linear", "cosine")
STRATEGIES: tuple[str, ...] = ("auto", "single", "ddp", "fsdp")
MIXED_PRECISIONS: tuple[str, ...] = ("no", "bf16", "fp16")
TRACKERS: tuple[str, ...] = ("tensorboard", "wandb")
RESUME_KEYWORDS: tuple[str, ...] = ("latest", "auto")


@dataclass
class OptimConfig:
    """AdamW with an optional warm-up and decay of the learning rate, and gradient clipping."""

    learning_rate: float = 1e-5
    """Peak learning rate, reached at the end of warm-up."""
    weight_decay: float = 0.0
    """Decoupled weight decay, applied to matrices and embeddings only (not to biases or norms)."""
    adam_beta1: float = 0.9
    """AdamW beta1: decay of the running mean of gradients."""
    adam_beta2: float = 0.999
    """AdamW beta2: decay of the running mean of squared gradients."""
    adam_eps: float = 1e-8
    """AdamW epsilon, added to the denominator for numerical stability."""
    lr_schedule: LrSchedule = "constant"
    """Learning rate after warm-up: constant, or linear / cosine decay to 0 at run.max_steps."""
    warmup_steps: int = 0
    """Optimizer steps of linear warm-up from learning_rate / warmup_steps up to learning_rate."""
    max_grad_norm: float = 1.0
    """Clip the global gradient norm to this value; 0 disables clipping (the norm is still reported)."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        # Written so that nan fails them too (every comparison with nan is false).
        for name in ("learning_rate", "weight_decay"):
            value = getattr(self, name)
            if not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        for name in ("adam_beta1", "adam_beta2"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
        if not 0 < self.adam_eps < math.inf:
            raise ValueError(f"adam_eps must be a finite number > 0, got {self.adam_eps}")
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if not 0 <= self.max_grad_norm < math.inf:
            raise ValueError(
                f"max_grad_norm must be a finite number >= 0 (0 = no clipping), got {self.max_grad_norm}"
            )


@dataclass
class DistributedConfig:
    """How the model is spread over processes and which precision it computes in."""

    strategy: Strategy = "auto"
    """auto: ddp with several processes, else single; fsdp shards parameters, gradients and optimizer state (ddp and fsdp need several processes)."""
    mixed_precision: MixedPrecision = "no"
    """Autocast the forward pass to bf16 or fp16 (fp16 needs a GPU); weights stay float32."""
    gradient_accumulation_steps: int = 1
    """Micro-batches per optimizer step, for steps that split their batch by it; the built-in algorithms split by their own micro_batch_size and refuse other values."""
    cpu: bool = False
    """Train on CPU even when a GPU is available."""
    cpu_threads: int = 0
    """Threads torch computes with when training on CPU; 0 follows the cores other processes leave free, checked every training step (all of them on an idle machine)."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.mixed_precision not in MIXED_PRECISIONS:
            raise ValueError(
                f"mixed_precision must be one of {MIXED_PRECISIONS}, got {self.mixed_precision!r}"
            )
        if self.gradient_accumulation_steps < 1:
            raise ValueError(
                f"gradient_accumulation_steps must be >= 1, got {self.gradient_accumulation_steps}"
            )
        if self.cpu_threads < 0:
            raise ValueError(f"cpu_threads must be >= 0 (0 = follow the free cores), got {self.cpu_threads}")


def check_no_accumulation(dist: DistributedConfig, batching: str) -> None:
    """Raise ValueError unless ``dist.gradient_accumulation_steps`` is 1, for an algorithm whose
    batches are split by its own settings (``batching`` says how): the field is for steps written on
    :class:`~mrlm.train.loop.TrainingSession` that split by it, and would otherwise change nothing."""
    if dist.gradient_accumulation_steps != 1:
        raise ValueError(
            f"{batching}; leave dist.gradient_accumulation_steps at 1 "
            f"(got {dist.gradient_accumulation_steps}): it would change nothing here"
        )


@dataclass
class RunConfig:
    """Where a run writes, how long it lasts, and how it is saved, resumed and reported."""

    output_dir: str = "runs/run"
    """Directory for config.yaml, metrics.jsonl, checkpoints/ and final/ (shared by all processes)."""
    seed: int = 0
    """Seed of the python, numpy and torch generators; process r uses seed + r."""
    max_steps: int = 100
    """Training steps in the run (one batch and its update, however many optimizer steps that takes); learning-rate decay and the progress bar count towards it."""
    save_every: int = 0
    """Save a checkpoint every this many training steps; 0 saves only at max_steps."""
    keep_checkpoints: int = 2
    """Checkpoints kept on disk, newest first; 0 keeps them all."""
    resume: str | None = None
    """Resume from "latest" (error if none), "auto" (latest if any, else start fresh) or a checkpoint path."""
    log_every: int = 1
    """Show metrics on the console and send them to trackers every this many steps (metrics.jsonl gets every call)."""
    report_to: tuple[str, ...] = ()
    """Experiment trackers fed with the metrics: tensorboard, wandb (their packages must be installed)."""
    progress_bar: bool = True
    """Show a progress line with the latest metrics and the time left on the console."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0 (env resets take no negative seed), got {self.seed}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.save_every < 0:
            raise ValueError(f"save_every must be >= 0 (0 = only at max_steps), got {self.save_every}")
        if self.keep_checkpoints < 0:
            raise ValueError(f"keep_checkpoints must be >= 0 (0 = keep all), got {self.keep_checkpoints}")
        if self.log_every < 1:
            raise ValueError(f"log_every must be >= 1, got {self.log_every}")
        if self.resume == "":
            raise ValueError('resume must be None, "latest", "auto" or a checkpoint path, got ""')
        # tyro hands over a tuple, people write lists: accept both, keep a tuple.
        self.report_to = tuple(self.report_to)
        unknown = [name for name in self.report_to if name not in TRACKERS]
        if unknown:
            raise ValueError(f"report_to accepts {TRACKERS}, got unknown {unknown}")
