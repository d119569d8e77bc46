"""One GRPO update of the tiny model on a fixed batch, split unevenly over the processes.

The batch is ``GROUPS`` groups of ``GROUP_SIZE`` synthetic trajectories (random prompts and
replies, fixed rewards). With two processes, process 0 holds the first group and process 1 the
others, as dynamic sampling can leave them; with one, it holds all. The update runs with a frozen
reference (``kl_coef > 0``), several iterations and small micro-batches, so the processes run
different numbers of real micro-batches. Each process writes ``<report-dir>/rank-<r>.json`` with the
update's loss and a digest of the trained weights.

Run ``python update_driver.py --help``; under ``torchrun --nproc_per_node 2`` for two processes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from mrlm.train.algorithms.grpo import REFERENCE, GRPOConfig, grpo_loss
from mrlm.train.algorithms.onpolicy import Normalisers, Rows, select_rows, update
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.fsdp import full_state_dict
from mrlm.train.ops.advantages import group_relative_advantages
from mrlm.train.rollout.batch import RolloutBatch
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

GROUPS = 3
GROUP_SIZE = 4
PROMPT, REPLY = 6, 8


def global_batch(vocab_size: int) -> RolloutBatch:
    """The fixed batch: replies of different lengths after a prompt, rewards with signal per group."""
    generator = torch.Generator().manual_seed(7)
    rows = GROUPS * GROUP_SIZE
    ids = torch.randint(3, vocab_size, (rows, PROMPT + REPLY), generator=generator)
    lengths = torch.randint(2, REPLY + 1, (rows,), generator=generator)
    positions = torch.arange(PROMPT + REPLY)
    attention = (positions < PROMPT + lengths[:, None]).long()
    mask = ((positions >= PROMPT) & (attention == 1)).float()
    rewards = torch.randint(0, 3, (rows,), generator=generator).float()
    return RolloutBatch(
        input_ids=ids,
        attention_mask=attention,
        mask=mask,
        old_logprobs=torch.zeros(ids.shape),
        rewards=rewards,
        groups=torch.arange(rows) // GROUP_SIZE,
    )


def run(output_dir: str, report_dir: str, strategy: str, aggregation: str) -> dict[str, Any]:
    tokenizer = build_tiny_tokenizer()
    config = GRPOConfig(
        group_size=GROUP_SIZE,
        prompts_per_step=1,
        micro_batch_size=2,
        kl_coef=0.1,
        num_iterations=2,
        aggregation=aggregation,  # type: ignore[arg-type]
        max_new_tokens=REPLY,
    )
    with TrainingSession(
        build_tiny_model(tokenizer, seed=0),
        frozen={REFERENCE: build_tiny_model(tokenizer, seed=3)},
        run=RunConfig(output_dir=output_dir, max_steps=1, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
        dist=DistributedConfig(strategy=strategy),  # type: ignore[arg-type]
    ) as session:
        whole = global_batch(len(tokenizer))
        rows = slice(0, GROUP_SIZE) if session.rank == 0 else slice(GROUP_SIZE, None)
        if session.world_size == 1:
            rows = slice(None)
        batch = select_rows(whole, rows)
        with torch.no_grad():  # the sampling policy is the policy before the update
            old = token_logprobs(session.model, batch.input_ids, batch.attention_mask, batch.mask)
            ref = token_logprobs(session.frozen[REFERENCE], batch.input_ids, batch.attention_mask, batch.mask)
        batch = dataclasses.replace(batch, old_logprobs=old)
        adv = group_relative_advantages(batch.rewards, GROUP_SIZE)

        def loss_fn(micro: RolloutBatch, part: Rows, norms: Normalisers) -> Any:
            return grpo_loss(
                session.model,
                micro,
                adv[part],
                config,
                ref_logprobs=ref[part],
                num_sequences=norms.num_sequences,
                num_tokens=norms.num_tokens,
            )

        result = update(session, batch, loss_fn, micro_batch_size=config.micro_batch_size, num_iterations=2)
        state = full_state_dict(session.model) if session.strategy == "fsdp" else session.model.state_dict()
        report = {
            "rank": session.rank,
            "step": session.step,
            "loss": result.loss,
            "kl": result.extras["kl"],
            "grad_norm": result.grad_norm,
            "tokens": result.normalisers.global_tokens,
            "digest": {key: float(value.double().pow(2).sum()) for key, value in state.items()},
        }
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        (Path(report_dir) / f"rank-{session.rank}.json").write_text(json.dumps(report))
    return report


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--report-dir", required=True)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--aggregation", default="token_mean")
    args = parser.parse_args(sys.argv[1:])
    run(args.output_dir, args.report_dir, args.strategy, args.aggregation)
    exit_process(0)  # see its docstring: no interpreter teardown in a worker
