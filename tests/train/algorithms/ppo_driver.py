"""Two PPO steps of the tiny model on scripted two-turn episodes, split over the processes.

The engine is scripted: each task seed gives one fixed episode (a prompt, a reply, env text, a
second reply, a reward per turn), so one process taking seeds 0-3 and two processes taking 0, 2 and
1, 3 train on the same global batch. The step runs with a frozen reference (``kl_coef > 0``, in the
reward), the sampling log-probs recomputed by the policy, global whitening, two epochs of one
mini-batch each and micro-batches of one episode. Each process writes
``<report-dir>/rank-<r>.json`` with the steps' metrics and a digest of every trained weight.

Run ``python ppo_driver.py --help``; under ``torchrun --nproc_per_node 2`` for two processes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mrlm.train.algorithms import ppo
from mrlm.train.algorithms.onpolicy import TaskSeeds
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.loop.distributed import exit_process
from mrlm.train.loop.fsdp import full_state_dict
from mrlm.train.ops.kl import AdaptiveKLController
from mrlm.train.rollout import Trajectory
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer
from mrlm.train.value import PolicyWithValueHead, value_model_from

TASKS_PER_STEP = 4  # over all processes


class ScriptedEngine:
    """Returns one fixed two-turn episode per seed."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def collect(self, seeds: Sequence[int], group_size: int) -> list[Trajectory]:
        return [self._episode(seed) for seed in seeds]

    def _episode(self, seed: int) -> Trajectory:
        rng = random.Random(seed)
        prompt, first, env_text, second = 5, rng.randint(2, 5), 3, rng.randint(1, 4)
        mask = [0] * prompt + [1] * first + [0] * env_text + [1] * second
        ids = [rng.randrange(3, self.vocab_size) for _ in mask]
        rewards = [rng.choice([0.0, 0.5]), rng.choice([0.0, 1.0])]
        spans = [(prompt, prompt + first), (prompt + first + env_text, len(mask))]
        return Trajectory(
            env_id="scripted",
            seed=seed,
            group=seed,
            messages=[],
            token_ids=ids,
            mask=mask,
            logprobs=[0.0] * len(mask),
            turn_rewards=rewards,
            finish_reasons=["stop", "stop"],
            turn_spans=spans,
        )

    def state_dict(self) -> dict[str, Any]:
        return {}


def run(output_dir: str, report_dir: str, strategy: str, critic: str) -> dict[str, Any]:
    tokenizer = build_tiny_tokenizer()
    policy = build_tiny_model(tokenizer, seed=0)
    models: dict[str, Any] = (
        {ppo.POLICY: PolicyWithValueHead(policy)}
        if critic == "value_head"
        else {ppo.POLICY: policy, ppo.CRITIC: value_model_from(policy, seed=1)}
    )
    config = ppo.PPOConfig(
        critic=critic,  # type: ignore[arg-type]
        kl_coef=0.1,
        ppo_epochs=2,
        recompute_old_logprobs=True,
        lam=0.9,
        gamma=0.99,
        micro_batch_size=1,
        run=RunConfig(output_dir=output_dir, max_steps=2, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    with TrainingSession(
        models,
        frozen={ppo.REFERENCE: build_tiny_model(tokenizer, seed=3)},
        run=config.run,
        optim=config.optim,
        dist=DistributedConfig(strategy=strategy),  # type: ignore[arg-type]
    ) as session:
        per_process = TASKS_PER_STEP // session.world_size
        config.prompts_per_step = config.mini_batch_size = per_process
        engine = ScriptedEngine(len(tokenizer))
        seeds = TaskSeeds(base=0, rank=session.rank, world_size=session.world_size)
        control = AdaptiveKLController(config.kl_coef, 1.0)
        steps = [
            ppo.train_step(session, engine, seeds, control, config, tokenizer)  # type: ignore[arg-type]
            for _ in range(2)
        ]
        digest = {}
        for name, model in session.models.items():
            state = full_state_dict(model) if session.strategy == "fsdp" else model.state_dict()
            for key, value in state.items():
                digest[f"{name}/{key.removeprefix('module.')}"] = float(value.double().pow(2).sum())
        keys = ("reward", "loss", "policy/loss", "value/loss", "kl", "returns/mean", "value/mean", "tokens")
        report = {
            "rank": session.rank,
            "step": session.step,
            "metrics": [{key: row[key] for key in keys} for row in steps],
            "digest": digest,
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
    parser.add_argument("--critic", default="value_head")
    args = parser.parse_args(sys.argv[1:])
    run(args.output_dir, args.report_dir, args.strategy, args.critic)
    exit_process(0)  # see its docstring: no interpreter teardown in a worker
