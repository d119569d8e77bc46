"""Trains the tiny model with a TrainingSession; the loop tests launch it as users launch training.

Every step uses the same fixed global batch of ``GLOBAL_ROWS`` equal-length sequences, split evenly over the processes and then into ``--accumulation`` micro-batches, so one
process and several compute the same mean loss and gradient. Each process writes
``<report-dir>/rank-<r>.json`` with its per-step losses and how its parameters are sharded.

Run ``python driver.py --help``; under ``torchrun --nproc_per_node 2`` or
``accelerate launch --num_processes 2 --cpu`` for several processes. ``--hang-at-save N`` makes the
save of step N stop just before its checkpoint is complete (for the killed-while-saving test).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop import checkpoint as ckpt
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.fsdp import local_numel
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

GLOBAL_ROWS = 8
SEQUENCE_LENGTH = 16
HANG_SENTINEL = "hanging-before-meta"


@dataclass
class Options:
    """What to train and where; mirrors the command-line flags."""

    output_dir: str
    report_dir: str
    strategy: str = "auto"
    steps: int = 4
    save_every: int = 0
    resume: str | None = None
    accumulation: int = 1
    final: bool = False
    hang_at_save: int = 0


def global_batch(vocab_size: int) -> torch.Tensor:
    """The token ids of the global batch, the same in every process and every run."""
    generator = torch.Generator().manual_seed(1234)
    # Ids 0-2 are special tokens; plain tokens make a cleaner language-modelling loss.
    return torch.randint(3, vocab_size, (GLOBAL_ROWS, SEQUENCE_LENGTH), generator=generator)


def train(options: Options) -> dict[str, Any]:
    """Train and return this process's report (also written to the report directory)."""
    started = time.monotonic()
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer)
    full_sizes = {name: param.numel() for name, param in model.named_parameters()}
    run = RunConfig(
        output_dir=options.output_dir,
        max_steps=options.steps,
        save_every=options.save_every,
        keep_checkpoints=0,
        resume=options.resume,
        progress_bar=False,
    )
    optim = OptimConfig(learning_rate=1e-3, warmup_steps=1, lr_schedule="linear")
    dist = DistributedConfig(strategy=options.strategy, gradient_accumulation_steps=options.accumulation)  # type: ignore[arg-type]
    with TrainingSession(model, run=run, optim=optim, dist=dist) as session:
        if options.hang_at_save:
            _hang_when_saving(session, options.hang_at_save)
        extra = session.restore()
        losses = []
        while session.step < options.steps:
            rows = global_batch(len(tokenizer)).chunk(session.world_size)[session.rank]
            micro_batches = rows.chunk(options.accumulation)
            local = 0.0
            for index, micro in enumerate(micro_batches):
                last = index == len(micro_batches) - 1
                with contextlib.nullcontext() if last else session.no_sync():
                    ids = micro.to(session.device)
                    loss = session.model(input_ids=ids, labels=ids).loss / len(micro_batches)
                    session.backward(loss)
                local += float(loss.detach())
            stats = session.optimizer_step()
            record = {
                "step": session.step,
                "loss": session.all_reduce_mean(local),
                "local_loss": local,
                **stats,
            }
            losses.append(record)
            session.log(record)
            session.maybe_save({"next_step": session.step + 1})
        if options.final:
            session.save_final(tokenizer)
        report = {
            "rank": session.rank,
            "world_size": session.world_size,
            "strategy": session.strategy,
            "distributed_type": str(session.accelerator.distributed_type),
            "wrapper": type(session.model).__name__,
            "losses": losses,
            "extra_state": extra,
            "shards": {
                name: {"local": local_numel(param), "full": full_sizes[name], "type": type(param).__name__}
                for name, param in session.named_trainable_parameters
            },
            "seconds": time.monotonic() - started,
            "options": asdict(options),
        }
        report_dir = Path(options.report_dir)
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / f"rank-{session.rank}.json").write_text(json.dumps(report, indent=1))
    return report


def _hang_when_saving(session: TrainingSession, step: int) -> None:
    """Make the save of ``step`` announce itself and sleep right before it would become complete."""
    write_meta = ckpt.write_meta

    def hanging(directory: Path, meta: dict[str, Any]) -> None:
        if meta["step"] == step:
            (session.output_dir / HANG_SENTINEL).write_text(str(os.getpid()))
            time.sleep(600)
        write_meta(directory, meta)

    ckpt.write_meta = hanging


def parse(argv: list[str]) -> Options:
    """Options from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--report-dir", required=True)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--save-every", type=int, default=0)
    parser.add_argument("--resume", default=None)
    parser.add_argument("--accumulation", type=int, default=1)
    parser.add_argument("--final", action="store_true")
    parser.add_argument("--hang-at-save", type=int, default=0)
    return Options(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    train(parse(sys.argv[1:]))
    exit_process(0)  # see its docstring: no interpreter teardown in a worker
