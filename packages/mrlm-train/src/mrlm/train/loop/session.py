"""One training run: the process set-up, the wrapped models, optimizers, schedules, checkpoints, metrics.

Algorithms write their step with a :class:`TrainingSession` and never touch DDP, FSDP, loss
scaling or file layouts. A session trains one model or several named ones (a policy and a critic,
one policy per agent), each with its own optimizer, schedule and clipping (see
:mod:`mrlm.train.loop.models`), and holds frozen ones beside them (a reference policy)::

    with TrainingSession(model, run=cfg.run, optim=cfg.optim, dist=cfg.dist, config=cfg) as session:
        progress = session.restore() or {"cursor": 0}
        while session.step < cfg.run.max_steps:
            micro_batches = split(next_batch(progress), cfg.dist.gradient_accumulation_steps)
            total = 0.0
            for i, micro in enumerate(micro_batches):
                with session.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext():
                    loss = loss_of(session.model, micro) / len(micro_batches)
                    session.backward(loss)
                total += loss.item()
            stats = session.optimizer_step()
            session.log({"loss": session.all_reduce_mean(total), **stats})
            session.maybe_save(progress)
        session.save_final(tokenizer)

Gradient accumulation contract (exact, whatever the number of processes):

* every :meth:`backward` between two :meth:`optimizer_step` calls adds its gradient, and the DDP or
  FSDP reduction then *averages* the sums over processes. So the caller scales each micro-batch
  loss such that the losses of one process add up to that process's share of the objective: with
  equal micro-batches, the micro-batch mean divided by the number of micro-batches; with a token
  mean over the whole global batch, ``sum of token losses / (global token count / world_size)``;
* :meth:`optimizer_step` runs once per accumulation cycle and updates every trainable model. ``dist.gradient_accumulation_steps`` is
  the number of micro-batches algorithms should split into; the session does not count them;
* the forward and backward of every micro-batch but the last may run inside :meth:`no_sync`, which
  skips the all-reduce / reduce-scatter that would be wasted on a partial sum; the last must run
  outside it (:meth:`optimizer_step` raises otherwise, since gradients would differ per process).

Steps: :attr:`step` counts *training* steps. Alone, each :meth:`optimizer_step` is one; an algorithm
that updates several times on one batch (GRPO's ``num_iterations``, PPO's epochs) wraps them in
:meth:`training_step`, and they count as one: ``max_steps``, ``save_every``, ``log_every`` and the
learning-rate schedule all count training steps.

Seeds: process ``r`` seeds python, numpy and torch with ``run.seed + r`` (process 0 as a single
process run would), so dropout and sampling differ between processes; anything that must agree
across processes (e.g. which prompts form the global batch) should use :attr:`seed` in its own
generator. Mixed precision is autocast of the model's forward (weights keep their dtype) in every
strategy; fp16 adds a loss scaler, and with it a non-finite gradient skips the update instead of
raising (the scaler's normal way to find its scale).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
import warnings
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import torch

from mrlm.train.loop import checkpoint as ckpt
from mrlm.train.loop import manifest
from mrlm.train.loop.boundary import StepBoundary, copied_containers, saves_at_failure
from mrlm.train.loop.config import DistributedConfig, OptimConfig, RunConfig
from mrlm.train.loop.cpu_threads import CpuThreads, independent_cpu_models, side_by_side
from mrlm.train.loop.distributed import (
    all_reduce_mean,
    barrier,
    check_world_size,
    gather_object,
    make_accelerator,
    resolve_strategy,
)
from mrlm.train.loop.errors import CheckpointError, DistributedSetupError, NonFiniteError
from mrlm.train.loop.fsdp import full_state_dict, gathered_weights, set_gradient_sync, shard_model
from mrlm.train.loop.fsio import fsync_tree, remove_tree, replace_text
from mrlm.train.loop.grads import clip_, first_nonfinite, total_norm
from mrlm.train.loop.metrics import METRICS_FILE, MetricsLog, to_float
from mrlm.train.loop.models import (
    TrainedModel,
    check_names,
    named_models,
    per_model,
    select_trainable,
    trained_model,
)
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.loop.progress import Progress
from mrlm.train.loop.rng import capture_rng_state, restore_rng_state, seed_everything
from mrlm.train.loop.serialize import to_plain, to_yaml
from mrlm.train.loop.signals import signals_held
from mrlm.train.loop.trackers import check_trackers, flatten
from mrlm.train.policy import mark_unnamed_opening

CONFIG_FILE = "config.yaml"
FINAL_DIR = "final"


class RunSettings(Protocol):
    """What an algorithm's config gives a session: the run, the optimizer and the distribution settings."""

    run: RunConfig
    optim: OptimConfig
    dist: DistributedConfig


class TrainingSession:
    """Owns the accelerator, the wrapped models, optimizers, schedules, checkpoints and metrics of one run.

    Args:
        model: the model to train, or several by name (``{"policy": ..., "critic": ...}``); a model
            alone is called ``"policy"``. On CPU or their device, any dtype; put in training mode here.
        run, optim, dist: the run's settings (see :mod:`mrlm.train.loop.config`). ``optim`` is
            shared by every trainable model, or given per name (a mapping naming each of them).
        config: the algorithm's whole config (a dataclass or mapping), written to config.yaml and
            into every checkpoint; defaults to ``{"run": run, "optim": optim, "dist": dist}``.
        trainable_parameters: the parameters to train (e.g. LoRA adapters), or a mapping from model
            name to them; every other parameter of that model gets ``requires_grad=False``. Default:
            those with ``requires_grad``.
        frozen: models that are only evaluated (a reference policy), by name: placed on the device
            and, under FSDP, sharded like the trained ones; in eval mode, without gradients. Under
            FSDP their forward is collective: every process calls it the same number of times.

    Every process of a run must create the session and call the collective methods
    (:meth:`optimizer_step`, :meth:`all_reduce_mean`, :meth:`gather_object`, :meth:`save_checkpoint`,
    :meth:`maybe_save`, :meth:`restore`, :meth:`save_final`) in the same order.
    """

    def __init__(
        self,
        model: torch.nn.Module | Mapping[str, torch.nn.Module],
        *,
        run: RunConfig,
        optim: OptimConfig | Mapping[str, OptimConfig],
        dist: DistributedConfig,
        config: object | None = None,
        trainable_parameters: Iterable[torch.nn.Parameter]
        | Mapping[str, Iterable[torch.nn.Parameter]]
        | None = None,
        frozen: Mapping[str, torch.nn.Module] | None = None,
    ) -> None:
        models = named_models(model)
        frozen_models = dict(frozen or {})
        check_names(frozen_models, taken=models)
        optims = per_model(optim, models, "optim")
        missing = [name for name, value in optims.items() if value is None]
        if missing:
            raise ValueError(f"optim gives no settings for the models {missing}")
        self.run = run
        self.optim_configs: dict[str, OptimConfig] = optims
        """Each trainable model's optimizer settings."""
        self.dist_config = dist
        self.output_dir = Path(run.output_dir)
        self.step = 0
        """Training steps done (restored by :meth:`restore`)."""
        self._closed = False
        self._micro_batches = 0
        self._count_lock = threading.Lock()
        self._in_no_sync = False
        self._unsynced = False
        self._grouping = False  # inside training_step()
        self._updates_in_step = 0
        self._last_saved_step = -1
        self._updates = 0  # optimizer steps begun by this session
        self._boundary: StepBoundary | None = None  # the last end of a step maybe_save saw
        check_output_dir(self.output_dir)
        trackers = check_trackers(run.report_to)
        self.accelerator: Any = make_accelerator(dist, log_with=trackers, project_dir=str(self.output_dir))
        try:
            self._setup(models, frozen_models, optim, config, trainable_parameters, trackers)
        except BaseException:
            self._release_accelerator()
            raise

    @classmethod
    def for_config(
        cls,
        config: RunSettings,
        model: torch.nn.Module | Mapping[str, torch.nn.Module],
        *,
        frozen: Mapping[str, torch.nn.Module] | None = None,
        optim: OptimConfig | Mapping[str, OptimConfig] | None = None,
    ) -> TrainingSession:
        """The session of an algorithm's run: ``config``'s run, optimizer (unless ``optim`` gives
        per-model settings) and distribution settings, and the whole config written with the run."""
        return cls(
            model,
            frozen=frozen,
            run=config.run,
            optim=config.optim if optim is None else optim,
            dist=config.dist,
            config=config,
        )

    def _setup(
        self,
        models: dict[str, torch.nn.Module],
        frozen: dict[str, torch.nn.Module],
        optim: object,
        config: object | None,
        trainable_parameters: object,
        trackers: list[str],
    ) -> None:
        check_world_size(self.accelerator)
        self.strategy: str = resolve_strategy(self.dist_config.strategy, self.world_size)
        """The strategy in use: "single", "ddp" or "fsdp"."""
        if self.strategy == "fsdp" and self.dist_config.mixed_precision == "fp16":
            raise DistributedSetupError("mixed_precision='fp16' is not supported with fsdp; use 'bf16'.")
        plain_config = to_plain(
            config if config is not None else {"run": self.run, "optim": optim, "dist": self.dist_config}
        )
        if not isinstance(plain_config, dict):
            raise TypeError(f"config must be a dataclass or a mapping, got {type(config).__name__}")
        self._config_yaml = to_yaml(plain_config)
        #: What kind of run this is (its config's class: GRPOConfig, ...), kept in checkpoints so that
        #: another algorithm's run does not resume them; None when no config was given.
        self._config_kind = None if config is None or isinstance(config, dict) else type(config).__name__
        if self.run.resume is None and ckpt.list_checkpoints(self.output_dir):
            # A fresh run would interleave its checkpoints with the old ones and "latest" would mix them.
            raise CheckpointError(
                f"{self.output_dir} already holds checkpoints of an earlier run; resume it "
                '(run.resume="latest" or "auto"), or use another output_dir'
            )
        seed_everything(self.run.seed + self.rank)
        subsets = per_model(
            trainable_parameters if isinstance(trainable_parameters, Mapping) else None, models, ""
        )
        if trainable_parameters is not None and not isinstance(trainable_parameters, Mapping):
            if len(models) > 1:
                raise ValueError("with several models, give trainable_parameters as a mapping by model name")
            subsets = dict.fromkeys(models, trainable_parameters)
        self._trained: dict[str, TrainedModel] = {}
        for name, module in models.items():
            names = select_trainable(module, subsets[name])
            module.train()
            self._trained[name] = trained_model(
                name, self._wrap(module), names, self.optim_configs[name], self.run.max_steps
            )
        self.frozen: dict[str, torch.nn.Module] = {name: self._place_frozen(m) for name, m in frozen.items()}
        """The frozen models by name, placed (and sharded under FSDP), in eval mode."""
        self.scaler = (
            torch.amp.GradScaler(self.device.type) if self.dist_config.mixed_precision == "fp16" else None
        )
        if self.is_main_process:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            ckpt.clean_stale(self.output_dir)
            replace_text(self.output_dir / CONFIG_FILE, self._config_yaml)
        barrier()
        self._metrics = MetricsLog(self.output_dir / METRICS_FILE)
        self._progress = (
            Progress(self.run.max_steps) if self.run.progress_bar and self.is_main_process else None
        )
        if trackers:
            self.accelerator.init_trackers(
                "mrlm", config=flatten(plain_config), init_kwargs={"wandb": {"name": self.output_dir.name}}
            )
        self._cpu_threads = CpuThreads(self.dist_config.cpu_threads) if self.device.type == "cpu" else None

    def _wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        if self.strategy == "fsdp":
            # evaluation_mode: device placement and autocast only; accelerate would otherwise wrap in DDP.
            placed = self.accelerator.prepare_model(model, evaluation_mode=True)
            return shard_model(placed, device_type=self.device.type, world_size=self.world_size)
        wrapped: torch.nn.Module = self.accelerator.prepare_model(model)
        if self.strategy == "ddp" and not isinstance(wrapped, torch.nn.parallel.DistributedDataParallel):
            raise DistributedSetupError(
                f"strategy='ddp' with {self.world_size} processes but accelerate did not wrap the model in DDP "
                f"(distributed type {self.accelerator.distributed_type})"
            )
        return wrapped

    def _place_frozen(self, model: torch.nn.Module) -> torch.nn.Module:
        model.eval().requires_grad_(False)
        placed: torch.nn.Module = self.accelerator.prepare_model(model, evaluation_mode=True)
        if self.strategy == "fsdp":
            return shard_model(placed, device_type=self.device.type, world_size=self.world_size)
        return placed

    @contextlib.contextmanager
    def generation_mode(self, name: str | None = None) -> Iterator[torch.nn.Module]:
        """The trainable model ``name`` (default: the first) to sample from inside the block, in eval
        mode (train mode restored after).

        Under FSDP the weights are gathered for the duration (see
        :func:`~mrlm.train.loop.fsdp.gathered_weights`): every process must enter together, and
        then each may generate independently. Elsewhere this is the unwrapped model as it is.
        """
        model = self.unwrapped(name)
        was_training = model.training
        model.eval()
        try:
            if self.strategy == "fsdp":
                with gathered_weights(model):
                    yield model
            else:
                yield model
        finally:
            model.train(was_training)

    # ------------------------------------------------------------------ facts about the run

    @property
    def model_names(self) -> list[str]:
        """The trainable models' names, the first being the one :attr:`model` returns."""
        return list(self._trained)

    @property
    def models(self) -> dict[str, torch.nn.Module]:
        """The trainable models to call, by name: DDP-wrapped, FSDP-sharded or plain, with autocast
        when mixed precision is on."""
        return {name: trained.model for name, trained in self._trained.items()}

    @property
    def model(self) -> torch.nn.Module:
        """The first trainable model, to call (see :attr:`models`)."""
        return self._first.model

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The first trainable model's optimizer."""
        return self._first.optimizer

    @property
    def scheduler(self) -> torch.optim.lr_scheduler.LambdaLR:
        """The first trainable model's learning-rate schedule."""
        return self._first.scheduler

    @property
    def optim_config(self) -> OptimConfig:
        """The first trainable model's optimizer settings."""
        return self._first.config

    @property
    def _first(self) -> TrainedModel:
        return next(iter(self._trained.values()))

    def unwrapped(self, name: str | None = None) -> torch.nn.Module:
        """The trainable model ``name`` (default: the first) without its DDP wrapper (under FSDP, the
        sharded model itself)."""
        return self.trained(name).unwrapped

    def trained(self, name: str | None = None) -> TrainedModel:
        """The record of trainable model ``name`` (default: the first): its optimizer, schedule, ..."""
        if name is None:
            return self._first
        try:
            return self._trained[name]
        except KeyError:
            raise KeyError(f"no trainable model {name!r}; the session trains {self.model_names}") from None

    @property
    def unwrapped_model(self) -> torch.nn.Module:
        """The first trainable model without its DDP wrapper (under FSDP, the sharded model itself)."""
        return self._first.unwrapped

    @property
    def device(self) -> torch.device:
        """The device of this process's models and inputs."""
        device: torch.device = self.accelerator.device
        return device

    @property
    def rank(self) -> int:
        """This process's index among all processes (0 on the main process)."""
        return int(self.accelerator.process_index)

    @property
    def world_size(self) -> int:
        """Number of processes training together."""
        return int(self.accelerator.num_processes)

    @property
    def is_main_process(self) -> bool:
        """Whether this process writes the shared files (config, metrics, checkpoint metadata, final model)."""
        return bool(self.accelerator.is_main_process)

    @property
    def seed(self) -> int:
        """The run's seed, the same on every process (global generators use seed + rank)."""
        return self.run.seed

    @property
    def named_trainable_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        """The first model's trained parameters by name (DTensor shards under FSDP), in optimizer order."""
        return list(self._first.named)

    # ------------------------------------------------------------------ the update

    def backward(self, loss: torch.Tensor) -> None:
        """Add the gradient of ``loss`` (a scalar) to the accumulated gradients.

        ``loss`` must already be scaled for accumulation and for the mean over processes (see the
        module docstring): it is differentiated as given. It may depend on several trainable models
        (a policy loss plus a value loss). Raises :class:`NonFiniteError` for a NaN or infinite loss,
        before any gradient is touched.
        """
        if loss.ndim != 0:
            raise ValueError(f"backward() needs a scalar loss, got shape {tuple(loss.shape)}")
        self.check_finite(loss.detach(), "loss")
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        with self._count_lock:  # losses of separate models may come from several threads at once
            self._micro_batches += 1
            self._unsynced = self._in_no_sync

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Run a micro-batch's forward and backward without reducing gradients over processes.

        For every micro-batch but the last of an accumulation cycle; applies to every trainable
        model; a no-op with one process.
        """
        if self._in_no_sync:
            raise RuntimeError("no_sync() is already active")
        self._in_no_sync = True
        try:
            with contextlib.ExitStack() as stack:
                for trained in self._trained.values():
                    if self.strategy == "ddp":
                        stack.enter_context(trained.model.no_sync())  # type: ignore[operator]
                    elif self.strategy == "fsdp":
                        set_gradient_sync(trained.model, False)
                        stack.callback(set_gradient_sync, trained.model, True)
                yield
        finally:
            self._in_no_sync = False

    @contextlib.contextmanager
    def training_step(self) -> Iterator[None]:
        """Count every :meth:`optimizer_step` inside the block as one training step.

        For algorithms that update several times on one batch (GRPO's ``num_iterations``, PPO's
        epochs): :attr:`step` grows by 1 and the learning-rate schedules advance once, when the
        block ends after at least one update (not when it ends with an exception).
        """
        if self._grouping:
            raise RuntimeError("training_step() is already active")
        self._grouping, self._updates_in_step = True, 0
        try:
            yield
        except BaseException:
            self._grouping = False
            raise
        self._grouping = False
        if self._updates_in_step:
            self._end_training_step()

    def optimizer_step(self) -> dict[str, float]:
        """Clip, step every optimizer, clear the gradients; outside :meth:`training_step`, also step
        the schedules and grow ``step`` by 1.

        Returns ``{"grad_norm": norm before clipping, "lr": learning rate of this update}`` of the
        first model, and ``grad_norm/<name>``, ``lr/<name>`` of every other one (with fp16,
        ``"skipped": 1.0`` is added when the loss scaler skipped a non-finite update). Separate
        models on CPU in one process are clipped and stepped side by side
        (:func:`~mrlm.train.loop.cpu_threads.side_by_side`).

        Raises:
            NonFiniteError: some gradient is NaN or infinite. Nothing is updated (parameters,
                optimizer states, schedules and ``step`` stay as they were; gradients are cleared),
                so the last checkpoint is the last good state.
            RuntimeError: no backward() since the last step, or the last one ran inside no_sync().
        """
        if self._micro_batches == 0:
            raise RuntimeError("optimizer_step() without any backward() since the last step")
        if self._unsynced and self.world_size > 1:
            raise RuntimeError(
                "the last backward() ran inside no_sync(): gradients were never reduced over processes; "
                "run the last micro-batch of each optimizer step outside no_sync()"
            )
        trained = list(self._trained.values())
        stats: dict[str, float] = {}
        norms: dict[str, float] = {}
        for model in trained:
            suffix = "" if model is trained[0] else f"/{model.name}"
            stats[f"lr{suffix}"] = model.lr
            if self.scaler is not None:
                self.scaler.unscale_(model.optimizer)
            norms[model.name] = stats[f"grad_norm{suffix}"] = total_norm(model.parameters)
        # Counted before anything changes: an interruption from here on leaves no state of a whole step.
        self._updates += 1
        if not all(math.isfinite(norm) for norm in norms.values()):
            if self.scaler is not None:
                for model in trained:
                    self.scaler.step(model.optimizer)  # skips the update, having seen the inf/nan
                self.scaler.update()
                self._after_update()
                return {**stats, "skipped": 1.0}
            bad = next(model for model in trained if not math.isfinite(norms[model.name]))
            parameter = first_nonfinite(bad.named)
            name = parameter if len(trained) == 1 else f"{bad.name}: {parameter}"
            self._clear_gradients()
            step = self.step + 1
            latest = ckpt.latest_checkpoint(self.output_dir)
            raise NonFiniteError(
                f"non-finite gradient (norm {norms[bad.name]}) at step {step} in parameter {name!r}; the "
                f"optimizer did not step; last checkpoint: {latest if latest is not None else 'none'}",
                step=step,
                where="gradient",
                parameter=name,
            )

        def update(model: TrainedModel) -> None:
            if model.config.max_grad_norm > 0:
                clip_(model.parameters, model.config.max_grad_norm, norms[model.name])
            if self.scaler is not None:
                self.scaler.step(model.optimizer)
            else:
                model.optimizer.step()

        if (
            self.world_size == 1
            and self.scaler is None
            and independent_cpu_models([m.model for m in trained])
        ):
            side_by_side([functools.partial(update, model) for model in trained])
        else:
            for model in trained:
                update(model)
        if self.scaler is not None:
            self.scaler.update()
        self._after_update()
        return stats

    def _after_update(self) -> None:
        self._clear_gradients()
        if self._grouping:
            self._updates_in_step += 1
        else:
            self._end_training_step()

    def _end_training_step(self) -> None:
        for trained in self._trained.values():
            trained.scheduler.step()
        self.step += 1
        if self._cpu_threads is not None:
            self._cpu_threads.adjust()

    def _clear_gradients(self) -> None:
        for trained in self._trained.values():
            trained.optimizer.zero_grad(set_to_none=True)
        self._micro_batches = 0
        self._unsynced = False

    def check_finite(self, value: torch.Tensor | float, where: str) -> None:
        """Raise :class:`NonFiniteError` if ``value`` has a NaN or infinite element.

        Local to this process (no communication); the step named is the one being computed.
        """
        tensor = torch.as_tensor(value).detach()
        if not bool(torch.isfinite(tensor).all()):
            shown = tensor.item() if tensor.numel() == 1 else f"tensor of shape {tuple(tensor.shape)}"
            step = self.step + 1
            latest = ckpt.latest_checkpoint(self.output_dir)
            raise NonFiniteError(
                f"non-finite value ({shown}) at step {step} in {where}; "
                f"last checkpoint: {latest if latest is not None else 'none'}",
                step=step,
                where=where,
            )

    # ------------------------------------------------------------------ collectives

    def all_reduce_mean(self, value: float | torch.Tensor) -> float:
        """The mean of a scalar over all processes, on every process."""
        return all_reduce_mean(value, self.device)

    def gather_object(self, obj: Any) -> list[Any]:
        """Every process's picklable ``obj``, in rank order, on every process."""
        return gather_object(obj)

    def wait_for_everyone(self) -> None:
        """Block until every process reaches this call."""
        barrier()

    # ------------------------------------------------------------------ metrics

    def log(self, metrics: Mapping[str, float | torch.Tensor], *, step: int | None = None) -> None:
        """Record metrics of ``step`` (default: :attr:`step`, i.e. after the update that produced them).

        Main process only (other processes return at once), so pass values already reduced over
        processes. Every call appends a line to ``metrics.jsonl``; every ``run.log_every`` steps and
        at ``run.max_steps`` the progress line and the trackers get the values too. A ``tokens``
        metric (tokens processed this step) feeds the tokens-per-second figure.
        """
        if not self.is_main_process:
            return
        step = self.step if step is None else step
        values = {key: to_float(value) for key, value in metrics.items()}
        self._metrics.write(step, values)
        if self._progress is not None and "tokens" in values:
            self._progress.count_tokens(values["tokens"])
        if step % self.run.log_every == 0 or step >= self.run.max_steps:
            if self._progress is not None:
                self._progress.show(step, values)
            if self.run.report_to:
                self.accelerator.log(values, step=step)

    # ------------------------------------------------------------------ checkpoints

    def save_checkpoint(
        self, extra_state: dict[str, Any] | None = None, *, rng: dict[str, Any] | None = None
    ) -> Path:
        """Save everything needed to continue exactly, as ``checkpoints/step-<step>``; return its path.

        Holds every trainable model and optimizer (sharded under FSDP), schedules and scaler, this step, every
        process's RNG states and ``extra_state`` (per process: e.g. a sampler's cursor; plain
        containers, numbers, strings and tensors, as ``torch.load(weights_only=True)`` reads them),
        and the config. Atomic (see :mod:`mrlm.train.loop.checkpoint`); keeps the newest
        ``run.keep_checkpoints``. Saving does not disturb the random streams. ``rng``: the generators'
        states to save instead of the current ones (see :meth:`maybe_save`). Ctrl-C and SIGTERM
        wait for the save to end (see :mod:`mrlm.train.loop.signals`).
        """
        with signals_held(f"writing the checkpoint of step {self.step}"):
            return self._save_checkpoint(extra_state, rng)

    def _save_checkpoint(self, extra_state: dict[str, Any] | None, rng: dict[str, Any] | None) -> Path:
        current = capture_rng_state()
        rng = current if rng is None else rng
        temporary = (
            self.output_dir / ckpt.CHECKPOINTS / f"{ckpt.TEMP_PREFIX}{ckpt.checkpoint_name(self.step)}"
        )
        if self.is_main_process:
            temporary = ckpt.begin(self.output_dir, self.step)
        barrier()
        had_state = bool(self.optimizer.state)
        ckpt.write_state(temporary, self._checkpoint_parts())
        ckpt.write_rank(temporary, self.rank, {"rng": rng, "extra_state": extra_state})
        barrier()
        if self.is_main_process:
            trainer = {
                "step": self.step,
                "schedulers": {name: t.scheduler.state_dict() for name, t in self._trained.items()},
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            }
            ckpt.write_trainer(temporary, trainer, self._config_yaml)
            ckpt.write_meta(
                temporary,
                {
                    "step": self.step,
                    "world_size": self.world_size,
                    "strategy": self.strategy,
                    "optimizer_has_state": had_state,
                    "models": self.model_names,
                    "config": self._config_kind,
                    "unsaved_weights": ckpt.unsaved_fingerprints(self._checkpoint_parts()),
                    "time": time.time(),
                },
            )
        barrier()
        manifest.seal(temporary, self.rank, self.world_size)  # the last file: every other one is written
        if self.is_main_process:
            ckpt.commit(temporary, self.output_dir, self.step)
            ckpt.prune(self.output_dir, self.run.keep_checkpoints)
        barrier()
        restore_rng_state(current)
        self._last_saved_step = self.step
        return self.output_dir / ckpt.CHECKPOINTS / ckpt.checkpoint_name(self.step)

    def maybe_save(self, extra_state: dict[str, Any] | None = None) -> Path | None:
        """Save if ``step`` is a multiple of ``run.save_every`` or is ``run.max_steps`` (once per step).

        Call it at the end of every step. When it does not save, it keeps the random generators'
        states and ``extra_state`` as they are now, so that a run of one process that stops on an
        error before the next update still saves this step (see :meth:`__exit__`).
        """
        if self.step == 0 or self.step == self._last_saved_step:
            return None
        due = self.step >= self.run.max_steps or (
            self.run.save_every > 0 and self.step % self.run.save_every == 0
        )
        if due:
            return self.save_checkpoint(extra_state)
        self._boundary = StepBoundary(
            self.step, self._updates, capture_rng_state(), copied_containers(extra_state)
        )
        return None

    def _save_at_failure(self, error: BaseException) -> None:
        """Save the last finished step of a run that ``error`` stopped, where that step is not saved
        yet and the models still hold it (no update since); only in a run of one process, since the
        others would not join the save."""
        boundary = self._boundary
        if (
            boundary is None
            or self.world_size != 1
            or not saves_at_failure(error)
            or boundary.step != self.step
            or boundary.updates != self._updates
            or self.step == self._last_saved_step
        ):
            return
        self._clear_gradients()  # of the failed step: not part of its state
        try:
            path = self.save_checkpoint(boundary.extra_state, rng=boundary.rng)
        except Exception as failure:
            _log.warning(
                "the run stopped during step %d and its step %d could not be saved: %s",
                self.step + 1,
                self.step,
                failure,
            )
            return
        _log.warning(
            "the run stopped during step %d (%s); step %d is saved as %s, and --run.resume latest "
            "continues from it",
            self.step + 1,
            type(error).__name__,
            self.step,
            path,
        )

    def restore(self) -> dict[str, Any] | None:
        """Continue from the checkpoint ``run.resume`` names; return its ``extra_state`` for this process.

        Returns None when ``run.resume`` is None, or is "auto" and there is no checkpoint yet.
        Restores models, optimizers, schedules, scaler, :attr:`step` and RNG states, and drops
        ``metrics.jsonl`` records after the checkpoint's step. With another number of processes
        than at saving, model and optimizer are resharded but RNG streams cannot be continued
        (a warning says so) and processes without a saved state get process 0's ``extra_state``.

        The checkpoint is first checked against its manifest (see :mod:`mrlm.train.loop.manifest`):
        nothing of a checkpoint with a missing, extra or changed file is loaded.

        Raises:
            CheckpointError: the checkpoint is missing, incomplete, unreadable or fails verification
                (names its path and the file), or is past ``run.max_steps``.
        """
        if self.run.resume is None:
            return None
        path = ckpt.resolve_resume(self.run.resume, self.output_dir)
        if path is None:
            return None
        # Before anything is read: loading unpickles state/.metadata, which can run any code.
        manifest.verify(path, self.rank, self.world_size)
        meta = ckpt.read_meta(path)
        saved_kind = meta.get("config")
        if saved_kind is not None and self._config_kind is not None and saved_kind != self._config_kind:
            # Each algorithm keeps its own state beside the models (a sampler's position, a round of
            # pairs): another's would be misread, or fail on a missing key after loading.
            raise CheckpointError(
                f"checkpoint {path} was saved by a {_run_kind(saved_kind)} run, this run is "
                f"{_run_kind(self._config_kind)}: a run resumes only checkpoints of its own algorithm"
            )
        saved_step = meta.get("step")
        if isinstance(saved_step, int) and saved_step > self.run.max_steps:
            # Nothing would train, and the final model written would be the checkpoint's, past the
            # step the run was asked to end at.
            raise CheckpointError(
                f"checkpoint {path} is at step {saved_step}, past this run's max_steps "
                f"({self.run.max_steps}): resume it with max_steps of at least {saved_step}, or resume "
                "an earlier checkpoint"
            )
        ckpt.load_state(path, self._checkpoint_parts(), meta)
        trainer = ckpt.load_torch(path / ckpt.TRAINER, path)
        for name, trained in self._trained.items():
            # The schedule's state holds the saving run's base learning rates too; this run's are
            # those it was given (the learning rate changes no weight, so a resume may change it).
            base_lrs = list(trained.scheduler.base_lrs)
            trained.scheduler.load_state_dict(trainer["schedulers"][name])
            trained.scheduler.base_lrs = base_lrs
            # The optimizer came back with the learning rate the saving run's schedule set last;
            # this run's schedule (max_steps may have grown) decides the next update's.
            for group, base_lr, factor in zip(
                trained.optimizer.param_groups,
                trained.scheduler.base_lrs,
                trained.scheduler.lr_lambdas,
                strict=True,
            ):
                group["lr"] = base_lr * factor(trained.scheduler.last_epoch)
        if self.scaler is not None and trainer.get("scaler") is not None:
            self.scaler.load_state_dict(trainer["scaler"])
        self.step = int(trainer["step"])
        own = path / ckpt.rank_file(self.rank)
        if meta.get("world_size") == self.world_size:
            state = ckpt.load_torch(own, path)  # a missing file of this process is an incomplete checkpoint
            restore_rng_state(state["rng"])
        else:
            warnings.warn(
                f"checkpoint {path} was saved by {meta.get('world_size')} processes, this run has "
                f"{self.world_size}: model and optimizer are resharded, random streams start afresh",
                stacklevel=2,
            )
            state = ckpt.load_torch(own if own.is_file() else path / ckpt.rank_file(0), path)
        if self.is_main_process:
            self._metrics.truncate_after(self.step)
        if self._progress is not None:
            self._progress.restart(self.step)
        self._last_saved_step = self.step
        barrier()
        extra_state: dict[str, Any] | None = state["extra_state"]
        return extra_state

    def _checkpoint_parts(self) -> dict[str, tuple[torch.nn.Module, torch.optim.Optimizer]]:
        return {name: (t.unwrapped, t.optimizer) for name, t in self._trained.items()}

    def save_final(
        self,
        tokenizer: Any | Mapping[str, Any] | None = None,
        *,
        by_name: bool = False,
        unnamed_openings: Collection[str] = (),
    ) -> Path:
        """Write the trained models (and tokenizer) with ``save_pretrained``; return ``output_dir/final``.

        One trainable model goes to ``final/`` itself (to ``final/<name>/`` with ``by_name``, as a run
        with one model per agent writes even its only agent's); several go each to ``final/<name>/``, the
        tokenizer beside each (or each model's own, given as a mapping by model name). Every directory loads with plain transformers (the class its config
        names: ``AutoModelForCausalLM`` for a policy, ``AutoModelForTokenClassification`` for a
        value model of :mod:`mrlm.train.value`), or with peft for adapters. Each model named in
        ``unnamed_openings`` was trained without the line naming its agent: its directory records
        so (:func:`~mrlm.train.policy.mark_unnamed_opening`). Under FSDP the full weights are
        gathered to the main process first. Replaces an earlier final directory atomically.
        Collective.
        """
        states = {
            name: full_state_dict(t.model) if self.strategy == "fsdp" else None
            for name, t in self._trained.items()
        }
        final = self.output_dir / FINAL_DIR
        if self.is_main_process:
            temporary = self.output_dir / f"{ckpt.TEMP_PREFIX}{FINAL_DIR}"
            remove_tree(temporary)
            several = by_name or len(self._trained) > 1
            for name, trained in self._trained.items():
                model: Any = trained.unwrapped
                if not hasattr(model, "save_pretrained"):
                    raise TypeError(
                        f"save_final needs models with save_pretrained; {name!r} is a {type(model).__name__}"
                    )
                target = temporary / name if several else temporary
                if states[name] is not None:
                    model.save_pretrained(target, state_dict=states[name])
                else:
                    model.save_pretrained(target)
                own = tokenizer.get(name) if isinstance(tokenizer, Mapping) else tokenizer
                if own is not None:
                    own.save_pretrained(target)
                if name in unnamed_openings:
                    mark_unnamed_opening(target)
            fsync_tree(temporary)
            trash = self.output_dir / f"{ckpt.TRASH_PREFIX}{FINAL_DIR}"
            remove_tree(trash)
            if final.exists():
                final.rename(trash)
            temporary.rename(final)
            remove_tree(trash)
        barrier()
        return final

    # ------------------------------------------------------------------ the end

    def close(self) -> None:
        """End the run: close files and trackers, leave the process group. Never saves anything.

        Without FSDP the model is handed back as it came (no DDP wrapper, no autocast in its
        forward); an FSDP model stays sharded and is unusable once the process group is gone.
        Afterwards another session can be created in the same process (one at a time).
        """
        if self._closed:
            return
        self._closed = True
        if self._progress is not None:
            self._progress.close()
        self._metrics.close()
        if self._cpu_threads is not None:
            self._cpu_threads.restore()
        if self.strategy != "fsdp":
            # Takes out the autocast accelerate put into the models' forward.
            for module in [*self.models.values(), *self.frozen.values()]:
                self.accelerator.unwrap_model(module, keep_fp32_wrapper=False)
        self._release_accelerator()

    def _release_accelerator(self) -> None:
        from accelerate.state import AcceleratorState, GradientState

        try:
            self.accelerator.end_training()  # finishes trackers, destroys the process group
        finally:
            # accelerate keeps its state in process-wide singletons that refuse a new precision.
            AcceleratorState._reset_state(reset_partial_state=True)
            GradientState._reset_state()

    def __enter__(self) -> TrainingSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the session; when an error ends the block, first save the last finished step
        (see :meth:`maybe_save`) unless a checkpoint already holds it."""
        try:
            if exc is not None:
                if self._progress is not None:
                    self._progress.close()  # what is said below starts on a line of its own
                self._save_at_failure(exc)
        finally:
            self.close()


_log = logging.getLogger(__name__)


def _run_kind(config_kind: object) -> str:
    """``"GRPOConfig"`` -> ``"GRPO"``: the algorithm a config class is named after."""
    name = str(config_kind)
    return name.removesuffix("Config") or name
