"""Trains a policy and a critic beside a frozen reference in one TrainingSession, as PPO will.

Every step uses the same fixed global batch (split evenly over the processes): the policy's loss
is its language-modelling loss plus a KL-like pull towards the frozen reference's log-probs, the
critic's is the squared error of its token values against fixed targets, and one backward of
their sum updates both models. Each step is one training step of two optimizer steps (as GRPO
with ``num_iterations=2``). Each process writes ``<report-dir>/rank-<r>.json`` with its per-step
losses and, at the end, a digest of both models' full weights.

Run ``python multi_driver.py --help``; under ``torchrun --nproc_per_node 2`` for several processes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.fsdp import full_state_dict
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer
from mrlm.train.value import token_values, value_model_from

GLOBAL_ROWS = 4
SEQUENCE_LENGTH = 12
ITERATIONS = 2


@dataclass
class Options:
    output_dir: str
    report_dir: str
    strategy: str = "auto"
    steps: int = 4
    save_every: int = 0
    resume: str | None = None


def global_batch(vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and value targets of the global batch, the same everywhere."""
    generator = torch.Generator().manual_seed(99)
    ids = torch.randint(3, vocab_size, (GLOBAL_ROWS, SEQUENCE_LENGTH), generator=generator)
    targets = torch.rand((GLOBAL_ROWS, SEQUENCE_LENGTH), generator=generator)
    return ids, targets


def train(options: Options) -> dict[str, Any]:
    tokenizer = build_tiny_tokenizer()
    policy = build_tiny_model(tokenizer, seed=0)
    critic = value_model_from(policy, seed=1)
    reference = build_tiny_model(tokenizer, seed=0)
    run = RunConfig(
        output_dir=options.output_dir,
        max_steps=options.steps,
        save_every=options.save_every,
        keep_checkpoints=0,
        resume=options.resume,
        progress_bar=False,
    )
    optims = {
        "policy": OptimConfig(learning_rate=1e-3, warmup_steps=1, lr_schedule="linear"),
        "critic": OptimConfig(learning_rate=3e-3, max_grad_norm=0.5),
    }
    dist = DistributedConfig(strategy=options.strategy)  # type: ignore[arg-type]
    with TrainingSession(
        {"policy": policy, "critic": critic},
        frozen={"reference": reference},
        run=run,
        optim=optims,
        dist=dist,
    ) as session:
        session.restore()
        records = []
        while session.step < options.steps:
            ids, targets = (
                part.chunk(session.world_size)[session.rank] for part in global_batch(len(tokenizer))
            )
            ids, targets = ids.to(session.device), targets.to(session.device)
            attention = torch.ones_like(ids)
            mask = torch.ones(ids.shape, dtype=torch.float32, device=ids.device)
            mask[:, 0] = 0
            with torch.no_grad():
                ref_logp = token_logprobs(session.frozen["reference"], ids, attention, mask)
            losses = []
            with session.training_step():
                for _ in range(ITERATIONS):
                    logp = token_logprobs(session.models["policy"], ids, attention, mask)
                    policy_loss = -(logp * mask).sum() / mask.sum() + ((logp - ref_logp) ** 2 * mask).mean()
                    values = token_values(session.models["critic"], ids, attention)
                    value_loss = ((values - targets) ** 2 * mask).sum() / mask.sum()
                    session.backward(policy_loss + value_loss)
                    stats = session.optimizer_step()
                    losses.append(
                        {
                            "policy": session.all_reduce_mean(float(policy_loss.detach())),
                            "value": session.all_reduce_mean(float(value_loss.detach())),
                            **stats,
                        }
                    )
            records.append({"step": session.step, "iterations": losses})
            session.log({"policy_loss": losses[-1]["policy"], "value_loss": losses[-1]["value"]})
            session.maybe_save()
        digests = {}
        for name, model in session.models.items():
            state = full_state_dict(model) if session.strategy == "fsdp" else model.state_dict()
            digests[name] = {key: float(value.double().pow(2).sum()) for key, value in state.items()}
        final = session.save_final(tokenizer)
        report = {
            "rank": session.rank,
            "strategy": session.strategy,
            "records": records,
            "digests": digests if session.is_main_process else None,
            "final": str(final),
            "frozen_type": type(session.frozen["reference"]).__name__,
            "options": asdict(options),
        }
        report_dir = Path(options.report_dir)
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / f"rank-{session.rank}.json").write_text(json.dumps(report, indent=1))
    return report


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--report-dir", required=True)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--save-every", type=int, default=0)
    parser.add_argument("--resume", default=None)
    return Options(**vars(parser.parse_args(argv)))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    train(parse(sys.argv[1:]))
    exit_process(0)  # see its docstring: no interpreter teardown in a worker
