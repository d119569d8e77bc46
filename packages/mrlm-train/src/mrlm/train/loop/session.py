"""One training run: the process set-up, the wrapped model, optimizer, schedule, checkpoints and metrics.

Algorithms write their step with a :class:`TrainingSession` and never touch DDP, FSDP, loss
scaling or file layouts::

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
* :meth:`optimizer_step` runs once per accumulation cycle. ``dist.gradient_accumulation_steps`` is
  the number of micro-batches algorithms should split into; the session does not count them;
* the forward and backward of every micro-batch but the last may run inside :meth:`no_sync`, which
  skips the all-reduce / reduce-scatter that would be wasted on a partial sum; the last must run
  outside it (:meth:`optimizer_step` raises otherwise, since gradients would differ per process).

Seeds: process ``r`` seeds python, numpy and torch with ``run.seed + r`` (process 0 as a single
process run would), so dropout and sampling differ between processes; anything that must agree
across processes (e.g. which prompts form the global batch) should use :attr:`seed` in its own
generator. Mixed precision is autocast of the model's forward (weights keep their dtype) in every
strategy; fp16 adds a loss scaler, and with it a non-finite gradient skips the update instead of
raising (the scaler's normal way to find its scale).
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from mrlm.train.loop import checkpoint as ckpt
from mrlm.train.loop import manifest
from mrlm.train.loop.config import DistributedConfig, OptimConfig, RunConfig
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
from mrlm.train.loop.optim import build_optimizer
from mrlm.train.loop.output_dir import check_output_dir
from mrlm.train.loop.progress import Progress
from mrlm.train.loop.rng import capture_rng_state, restore_rng_state, seed_everything
from mrlm.train.loop.schedule import build_scheduler
from mrlm.train.loop.serialize import to_plain, to_yaml
from mrlm.train.loop.trackers import check_trackers, flatten

CONFIG_FILE = "config.yaml"
FINAL_DIR = "final"


class TrainingSession:
    """Owns the accelerator, the wrapped model, optimizer, scheduler, checkpoints and metrics of one run.

    Args:
        model: the model to train, on CPU or its device, any dtype; put in training mode here.
        run, optim, dist: the run's settings (see :mod:`mrlm.train.loop.config`).
        config: the algorithm's whole config (a dataclass or mapping), written to config.yaml and
            into every checkpoint; defaults to ``{"run": run, "optim": optim, "dist": dist}``.
        trainable_parameters: the parameters to train (e.g. LoRA adapters); every other parameter
            gets ``requires_grad=False``. Default: those with ``requires_grad``.

    Every process of a run must create the session and call the collective methods
    (:meth:`optimizer_step`, :meth:`all_reduce_mean`, :meth:`gather_object`, :meth:`save_checkpoint`,
    :meth:`maybe_save`, :meth:`restore`, :meth:`save_final`) in the same order.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        run: RunConfig,
        optim: OptimConfig,
        dist: DistributedConfig,
        config: object | None = None,
        trainable_parameters: Iterable[torch.nn.Parameter] | None = None,
    ) -> None:
        self.run = run
        self.optim_config = optim
        self.dist_config = dist
        self.output_dir = Path(run.output_dir)
        self.step = 0
        """Optimizer steps done (restored by :meth:`restore`)."""
        self._closed = False
        self._micro_batches = 0
        self._in_no_sync = False
        self._unsynced = False
        self._last_saved_step = -1
        check_output_dir(self.output_dir)
        trackers = check_trackers(run.report_to)
        self.accelerator: Any = make_accelerator(dist, log_with=trackers, project_dir=str(self.output_dir))
        try:
            self._setup(model, config, trainable_parameters, trackers)
        except BaseException:
            self._release_accelerator()
            raise

    def _setup(
        self,
        model: torch.nn.Module,
        config: object | None,
        trainable_parameters: Iterable[torch.nn.Parameter] | None,
        trackers: list[str],
    ) -> None:
        check_world_size(self.accelerator)
        self.strategy: str = resolve_strategy(self.dist_config.strategy, self.world_size)
        """The strategy in use: "single", "ddp" or "fsdp"."""
        if self.strategy == "fsdp" and self.dist_config.mixed_precision == "fp16":
            raise DistributedSetupError("mixed_precision='fp16' is not supported with fsdp; use 'bf16'.")
        plain_config = to_plain(
            config
            if config is not None
            else {"run": self.run, "optim": self.optim_config, "dist": self.dist_config}
        )
        if not isinstance(plain_config, dict):
            raise TypeError(f"config must be a dataclass or a mapping, got {type(config).__name__}")
        self._config_yaml = to_yaml(plain_config)
        if self.run.resume is None and ckpt.list_checkpoints(self.output_dir):
            # A fresh run would interleave its checkpoints with the old ones and "latest" would mix them.
            raise CheckpointError(
                f"{self.output_dir} already holds checkpoints of an earlier run; resume it "
                '(run.resume="latest" or "auto"), or use another output_dir'
            )
        seed_everything(self.run.seed + self.rank)
        names = _select_trainable(model, trainable_parameters)
        model.train()
        self.model: torch.nn.Module = self._wrap(model)
        """The model to call: DDP-wrapped, FSDP-sharded or plain, with autocast when mixed precision is on."""
        parameters = dict(self.unwrapped_model.named_parameters())
        self._named = [(name, parameters[name]) for name in names]
        self.optimizer = build_optimizer(self._named, self.optim_config)
        self.scheduler = build_scheduler(self.optimizer, self.optim_config, self.run.max_steps)
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

    @contextlib.contextmanager
    def generation_mode(self) -> Iterator[torch.nn.Module]:
        """The model to sample from inside the block, in eval mode (train mode restored after).

        Under FSDP the weights are gathered for the duration (see
        :func:`~mrlm.train.loop.fsdp.gathered_weights`): every process must enter together, and
        then each may generate independently. Elsewhere this is the unwrapped model as it is.
        """
        model = self.unwrapped_model
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
    def unwrapped_model(self) -> torch.nn.Module:
        """The model without its DDP wrapper (under FSDP, the sharded model itself)."""
        if isinstance(self.model, torch.nn.parallel.DistributedDataParallel):
            module: torch.nn.Module = self.model.module
            return module
        return self.model

    @property
    def device(self) -> torch.device:
        """The device of this process's model and inputs."""
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
        """The trained parameters by name (DTensor shards under FSDP), in optimizer order."""
        return list(self._named)

    # ------------------------------------------------------------------ the update

    def backward(self, loss: torch.Tensor) -> None:
        """Add the gradient of ``loss`` (a scalar) to the accumulated gradients.

        ``loss`` must already be scaled for accumulation and for the mean over processes (see the
        module docstring): it is differentiated as given. Raises :class:`NonFiniteError` for a NaN
        or infinite loss, before any gradient is touched.
        """
        if loss.ndim != 0:
            raise ValueError(f"backward() needs a scalar loss, got shape {tuple(loss.shape)}")
        self.check_finite(loss.detach(), "loss")
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        self._micro_batches += 1
        self._unsynced = self._in_no_sync

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Run a micro-batch's forward and backward without reducing gradients over processes.

        For every micro-batch but the last of an accumulation cycle; a no-op with one process.
        """
        if self._in_no_sync:
            raise RuntimeError("no_sync() is already active")
        self._in_no_sync = True
        try:
            if self.strategy == "ddp":
                with self.model.no_sync():  # type: ignore[operator]
                    yield
            elif self.strategy == "fsdp":
                set_gradient_sync(self.model, False)
                try:
                    yield
                finally:
                    set_gradient_sync(self.model, True)
            else:
                yield
        finally:
            self._in_no_sync = False

    def optimizer_step(self) -> dict[str, float]:
        """Clip, step the optimizer and the schedule, clear the gradients; ``step`` grows by 1.

        Returns ``{"grad_norm": norm before clipping, "lr": learning rate of this update}`` (with
        fp16, ``"skipped": 1.0`` is added when the loss scaler skipped a non-finite update).

        Raises:
            NonFiniteError: some gradient is NaN or infinite. Nothing is updated (parameters,
                optimizer state, schedule and ``step`` stay as they were; gradients are cleared),
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
        parameters = [param for _, param in self._named]
        lr = float(self.optimizer.param_groups[0]["lr"])
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        norm = total_norm(parameters)
        if not math.isfinite(norm):
            if self.scaler is not None:
                self.scaler.step(self.optimizer)  # skips the update, having seen the inf/nan
                self.scaler.update()
                self._finish_step()
                return {"grad_norm": norm, "lr": lr, "skipped": 1.0}
            name = first_nonfinite(self._named)
            self._clear_gradients()
            step = self.step + 1
            latest = ckpt.latest_checkpoint(self.output_dir)
            raise NonFiniteError(
                f"non-finite gradient (norm {norm}) at step {step} in parameter {name!r}; the optimizer "
                f"did not step; last checkpoint: {latest if latest is not None else 'none'}",
                step=step,
                where="gradient",
                parameter=name,
            )
        if self.optim_config.max_grad_norm > 0:
            clip_(parameters, self.optim_config.max_grad_norm, norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self._finish_step()
        return {"grad_norm": norm, "lr": lr}

    def _finish_step(self) -> None:
        self.scheduler.step()
        self._clear_gradients()
        self.step += 1

    def _clear_gradients(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
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

    def save_checkpoint(self, extra_state: dict[str, Any] | None = None) -> Path:
        """Save everything needed to continue exactly, as ``checkpoints/step-<step>``; return its path.

        Holds the model and optimizer (sharded under FSDP), scheduler and scaler, this step, every
        process's RNG states and ``extra_state`` (per process: e.g. a sampler's cursor; plain
        containers, numbers, strings and tensors, as ``torch.load(weights_only=True)`` reads them),
        and the config. Atomic (see :mod:`mrlm.train.loop.checkpoint`); keeps the newest
        ``run.keep_checkpoints``. Saving does not disturb the random streams.
        """
        rng = capture_rng_state()
        temporary = (
            self.output_dir / ckpt.CHECKPOINTS / f"{ckpt.TEMP_PREFIX}{ckpt.checkpoint_name(self.step)}"
        )
        if self.is_main_process:
            temporary = ckpt.begin(self.output_dir, self.step)
        barrier()
        had_state = bool(self.optimizer.state)
        ckpt.write_state(temporary, self.unwrapped_model, self.optimizer)
        ckpt.write_rank(temporary, self.rank, {"rng": rng, "extra_state": extra_state})
        barrier()
        if self.is_main_process:
            trainer = {
                "step": self.step,
                "scheduler": self.scheduler.state_dict(),
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
                    "time": time.time(),
                },
            )
        barrier()
        manifest.seal(temporary, self.rank, self.world_size)  # the last file: every other one is written
        if self.is_main_process:
            ckpt.commit(temporary, self.output_dir, self.step)
            ckpt.prune(self.output_dir, self.run.keep_checkpoints)
        barrier()
        restore_rng_state(rng)
        self._last_saved_step = self.step
        return self.output_dir / ckpt.CHECKPOINTS / ckpt.checkpoint_name(self.step)

    def maybe_save(self, extra_state: dict[str, Any] | None = None) -> Path | None:
        """Save if ``step`` is a multiple of ``run.save_every`` or is ``run.max_steps`` (once per step)."""
        if self.step == 0 or self.step == self._last_saved_step:
            return None
        due = self.step >= self.run.max_steps or (
            self.run.save_every > 0 and self.step % self.run.save_every == 0
        )
        return self.save_checkpoint(extra_state) if due else None

    def restore(self) -> dict[str, Any] | None:
        """Continue from the checkpoint ``run.resume`` names; return its ``extra_state`` for this process.

        Returns None when ``run.resume`` is None, or is "auto" and there is no checkpoint yet.
        Restores model, optimizer, scheduler, scaler, :attr:`step` and RNG states, and drops
        ``metrics.jsonl`` records after the checkpoint's step. With another number of processes
        than at saving, model and optimizer are resharded but RNG streams cannot be continued
        (a warning says so) and processes without a saved state get process 0's ``extra_state``.

        The checkpoint is first checked against its manifest (see :mod:`mrlm.train.loop.manifest`):
        nothing of a checkpoint with a missing, extra or changed file is loaded.

        Raises:
            CheckpointError: the checkpoint is missing, incomplete, unreadable or fails verification
                (names its path and the file).
        """
        if self.run.resume is None:
            return None
        path = ckpt.resolve_resume(self.run.resume, self.output_dir)
        if path is None:
            return None
        # Before anything is read: loading unpickles state/.metadata, which can run any code.
        manifest.verify(path, self.rank, self.world_size)
        meta = ckpt.read_meta(path)
        ckpt.load_state(path, self.unwrapped_model, self.optimizer, meta)
        trainer = ckpt.load_torch(path / ckpt.TRAINER, path)
        self.scheduler.load_state_dict(trainer["scheduler"])
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

    def save_final(self, tokenizer: Any | None = None) -> Path:
        """Write the trained model (and tokenizer) to ``output_dir/final`` with ``save_pretrained``.

        The directory loads with plain ``AutoModelForCausalLM.from_pretrained``; under FSDP the
        full weights are gathered to the main process first. Replaces an earlier final model
        atomically. Collective.
        """
        state = full_state_dict(self.model) if self.strategy == "fsdp" else None
        final = self.output_dir / FINAL_DIR
        if self.is_main_process:
            temporary = self.output_dir / f"{ckpt.TEMP_PREFIX}{FINAL_DIR}"
            remove_tree(temporary)
            model: Any = self.unwrapped_model
            if not hasattr(model, "save_pretrained"):
                raise TypeError(f"save_final needs a model with save_pretrained, got {type(model).__name__}")
            if state is not None:
                model.save_pretrained(temporary, state_dict=state)
            else:
                model.save_pretrained(temporary)
            if tokenizer is not None:
                tokenizer.save_pretrained(temporary)
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
        if self.strategy != "fsdp":
            # Takes out the autocast accelerate put into the model's forward.
            self.accelerator.unwrap_model(self.model, keep_fp32_wrapper=False)
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
        self.close()


def _select_trainable(
    model: torch.nn.Module, trainable_parameters: Iterable[torch.nn.Parameter] | None
) -> list[str]:
    """Names of the parameters to train; freezes the others when a subset is given."""
    named = list(model.named_parameters())
    if trainable_parameters is None:
        return [name for name, param in named if param.requires_grad]
    wanted = {id(param) for param in trainable_parameters}
    names = [name for name, param in named if id(param) in wanted]
    if len(names) != len(wanted):
        raise ValueError("trainable_parameters holds parameters that are not parameters of the model")
    for _, param in named:
        param.requires_grad_(id(param) in wanted)
    return names
