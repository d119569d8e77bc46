"""Setting up the processes: the accelerator, the strategy, and the few collectives the loop needs.

accelerate owns process-group set-up, device placement, DDP wrapping, autocast and trackers. It
does not own sharding: on CPU its FSDP plugin silently trains an unsharded copy per process, so
MRLM shards with torch's ``fully_shard`` itself (see :mod:`mrlm.train.loop.fsdp`) and refuses
every set-up that would quietly give something other than what was asked:

* accelerate's own FSDP / DeepSpeed / Megatron switches (``accelerate launch --use_fsdp`` ...);
* a launcher that started N processes while accelerate sees fewer;
* ``strategy="single"`` with several processes (each would train its own copy);
* ``strategy="ddp"`` or ``"fsdp"`` with one process (a launch that went wrong);
* ``mixed_precision="fp16"`` on CPU, or ``"bf16"`` on a GPU without bf16.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any, NoReturn

import torch
import torch.distributed as torch_dist

from mrlm.train.loop.config import DistributedConfig
from mrlm.train.loop.errors import DistributedSetupError

# Environment switches with which accelerate would take over wrapping from MRLM.
_FOREIGN_BACKENDS: dict[str, str] = {
    "ACCELERATE_USE_FSDP": "--use_fsdp",
    "ACCELERATE_USE_DEEPSPEED": "--use_deepspeed",
    "ACCELERATE_USE_MEGATRON_LM": "--use_megatron_lm",
}


def launched_world_size() -> int:
    """The number of processes the launcher (torchrun, accelerate launch) started; 1 when run plainly."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def check_environment(dist: DistributedConfig) -> None:
    """Refuse accelerate launcher settings that would override or silently contradict ``dist``."""
    for variable, flag in _FOREIGN_BACKENDS.items():
        if os.environ.get(variable, "false").lower() == "true":
            raise DistributedSetupError(
                f"{variable}=true (accelerate launch {flag}): MRLM wraps the model itself and accelerate's "
                "plugin would replace it (on CPU, accelerate's FSDP silently trains one unsharded copy per "
                f"process). Launch without {flag} and choose the strategy with dist.strategy "
                "(e.g. --dist.strategy fsdp)."
            )
    launcher_precision = os.environ.get("ACCELERATE_MIXED_PRECISION")
    if launcher_precision is not None and launcher_precision not in ("no", dist.mixed_precision):
        raise DistributedSetupError(
            f"accelerate launch --mixed_precision {launcher_precision} disagrees with "
            f"dist.mixed_precision={dist.mixed_precision!r}; set the precision in one place (dist.mixed_precision)."
        )


def wants_cpu(dist: DistributedConfig) -> bool:
    """Whether to force the CPU: asked for, or no accelerator device exists.

    Forcing it when there is no GPU matters: accelerate without ``cpu=True`` under torchrun on a
    GPU-less machine falls back to one process per copy (DistributedType.NO) without a word.
    """
    return dist.cpu or torch.accelerator.current_accelerator(check_available=True) is None


def check_mixed_precision(mixed_precision: str, device_type: str) -> None:
    """Refuse a precision the device cannot compute in."""
    if mixed_precision == "fp16" and device_type == "cpu":
        raise DistributedSetupError(
            "mixed_precision='fp16' needs a GPU (fp16 autocast with loss scaling); on CPU use 'bf16' or 'no'."
        )
    if mixed_precision == "bf16" and device_type == "cuda" and not torch.cuda.is_bf16_supported():
        raise DistributedSetupError(
            "mixed_precision='bf16' is not supported by this GPU; use 'fp16' or 'no'."
        )


def make_accelerator(dist: DistributedConfig, *, log_with: list[str], project_dir: str) -> Any:
    """Create the accelerator, which joins the process group (check it with :func:`check_world_size`).

    Accumulation is left to the session (accelerate's counter stays at 1), and so is the choice of
    wrapper: no FSDP plugin is ever passed.
    """
    from accelerate import Accelerator

    check_environment(dist)
    cpu = wants_cpu(dist)
    device_type = "cpu" if cpu else torch.accelerator.current_accelerator(check_available=True).type  # type: ignore[union-attr]
    check_mixed_precision(dist.mixed_precision, device_type)
    accelerator = Accelerator(
        cpu=cpu,
        mixed_precision=dist.mixed_precision,
        gradient_accumulation_steps=1,
        log_with=log_with or None,
        project_dir=project_dir,
    )
    return accelerator


def check_world_size(accelerator: Any) -> None:
    """Refuse an accelerator that sees fewer processes than the launcher started."""
    launched = launched_world_size()
    if accelerator.num_processes != launched:
        raise DistributedSetupError(
            f"the launcher started {launched} processes but accelerate sees {accelerator.num_processes} "
            f"(distributed type {accelerator.distributed_type}); training would not be distributed."
        )


def resolve_strategy(strategy: str, world_size: int) -> str:
    """The concrete strategy: ``"single"``, ``"ddp"`` or ``"fsdp"``, or an error for impossible ones.

    ``auto`` is ddp with several processes and single with one. ``ddp`` or ``fsdp`` with one
    process is an error, not a quiet single-process run: it nearly always means the launch went
    wrong (``accelerate launch --cpu --num_processes N`` starts one process, whatever N). ``single``
    with several processes is an error too: each would train its own copy.
    """
    if strategy == "auto":
        return "ddp" if world_size > 1 else "single"
    if strategy not in ("single", "ddp", "fsdp"):
        raise ValueError(f"unknown strategy {strategy!r}")
    if strategy == "single" and world_size > 1:
        raise DistributedSetupError(
            f"strategy='single' with {world_size} processes would train {world_size} unrelated copies; "
            "use 'ddp' or 'fsdp', or launch one process."
        )
    if strategy in ("ddp", "fsdp") and world_size < 2:
        raise DistributedSetupError(
            f"strategy={strategy!r} needs several processes, but this is a single one. Launch with "
            "`torchrun --nproc_per_node N ...` or `accelerate launch --multi_gpu --num_processes N ...` "
            "(on CPU too: `accelerate launch --cpu` starts a single process whatever --num_processes "
            "says), or use strategy='single' / 'auto'."
        )
    return strategy


def is_distributed() -> bool:
    """Whether a process group with more than one process is active."""
    return torch_dist.is_available() and torch_dist.is_initialized() and torch_dist.get_world_size() > 1


def all_reduce_mean(value: float | torch.Tensor, device: torch.device) -> float:
    """The mean of a scalar over all processes (the value itself with one process)."""
    tensor = torch.as_tensor(value, dtype=torch.float64 if device.type == "cpu" else torch.float32)
    tensor = tensor.detach().to(device).reshape(())
    if is_distributed():
        torch_dist.all_reduce(tensor, op=torch_dist.ReduceOp.SUM)
        tensor = tensor / torch_dist.get_world_size()
    return float(tensor.item())


def gather_object(obj: Any) -> list[Any]:
    """Every process's ``obj`` (picklable), in rank order, on every process."""
    if not is_distributed():
        return [obj]
    gathered: list[Any] = [None] * torch_dist.get_world_size()
    torch_dist.all_gather_object(gathered, obj)
    return gathered


def barrier() -> None:
    """Wait until every process gets here (nothing to wait for with one process)."""
    if is_distributed():
        torch_dist.barrier()


def exit_process(status: int) -> NoReturn:
    """End this process with ``status``; for the entry point of a script or command.

    In a worker of a multi-process run (``WORLD_SIZE > 1``, as torchrun sets it) the standard
    streams and logging are flushed and the process ends with ``os._exit``, skipping the
    interpreter's teardown: a sharded model keeps its process group alive to the end, and when the
    interpreter tears down while gloo's worker threads still hold tensors, a thread that asks for
    the interpreter lock is ended mid-call and the process aborts (SIGABRT, "terminate called
    without an active exception") after the run has finished. Sessions close their files and
    trackers before this, so nothing is lost. Elsewhere it is ``sys.exit(status)``.
    """
    if int(os.environ.get("WORLD_SIZE", "1") or "1") > 1:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        os._exit(status)
    sys.exit(status)
