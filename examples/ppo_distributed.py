"""Distributed PPO: two processes under torchrun, the policy and a separate critic sharded with FSDP.

Each process samples its own share of the step's tasks (``prompts_per_step`` per process) from
mrlm/Math-v0 (level 1) with the tiny local model, and the update runs over the whole batch: the
advantages are whitened and the losses normalised over every process's tokens, so two processes
train as one would on the joint batch. Both the policy and the critic (``critic="model"``, a value
model started from the policy's weights) are sharded; the collective gloo backend runs it on CPUs.
The run ends with a checkpoint and the final models, gathered whole: ``final/policy`` and
``final/critic``. The main process prints each step's metrics and where everything is.

Run it with torchrun::

    uv run torchrun --nproc_per_node 2 examples/ppo_distributed.py

or as a plain script, which launches those two processes itself (about 25 seconds on two CPU
cores)::

    uv run python examples/ppo_distributed.py --steps 3

The run lands in ./runs/ppo_distributed and resumes from its latest checkpoint when started again:
``--steps 5`` then trains steps 4 and 5 only. The same run from the command line::

    uv run torchrun --nproc_per_node 2 -m mrlm.train.cli ppo --dist.strategy fsdp --critic model \\
        --env-kwargs '{"level": 1}' --run.max-steps 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from mrlm.train.algorithms.ppo import CRITIC, POLICY, PPOConfig, train
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig
from mrlm.train.loop.checkpoint import list_checkpoints
from mrlm.train.loop.distributed import exit_process


def launch(processes: int) -> int:
    """Run this file under ``torch.distributed.run`` with the same arguments; return its status."""
    # One thread per process: two processes on two cores, without threads fighting over them.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        str(processes),
    ]
    return subprocess.run([*command, __file__, *sys.argv[1:]], env=env, check=False).returncode


def report(out: Path, final: Path) -> None:
    """Each step's metrics (one line of metrics.jsonl, over every process), the checkpoint and models."""
    for line in (out / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        print(
            f"step {row['step']}: reward {row['reward']:.3f}, value loss {row['value/loss']:.4f}, "
            f"tokens {row['tokens']:.0f} (both processes), grad norm policy {row['grad_norm']:.3f}, "
            f"critic {row['grad_norm/critic']:.3f}"
        )
    step, checkpoint = list_checkpoints(out)[-1]
    print(f"checkpoint of step {step}: {checkpoint}")
    print(f"final models: {final / POLICY} (policy), {final / CRITIC} (critic)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prompts-per-step", type=int, default=2, help="tasks per step and process")
    parser.add_argument("--processes", type=int, default=2, help="processes a plain run launches")
    parser.add_argument("--output-dir", default="runs/ppo_distributed")
    args = parser.parse_args()
    if "WORLD_SIZE" not in os.environ:
        sys.exit(launch(args.processes))

    out = Path(args.output_dir)
    config = PPOConfig(
        env_id="mrlm/Math-v0",
        env_kwargs=json.dumps({"level": 1}),
        critic="model",
        critic_learning_rate=1e-3,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=16,
        mini_batch_size=args.prompts_per_step,
        micro_batch_size=args.prompts_per_step,
        ppo_epochs=2,
        # "auto" resumes from the latest checkpoint when there is one, and starts afresh when not.
        run=RunConfig(output_dir=str(out), max_steps=args.steps, resume="auto", progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
        dist=DistributedConfig(strategy="fsdp"),
    )
    final = train(config)  # a checkpoint at max_steps, then the models gathered into final/
    if int(os.environ["RANK"]) == 0:
        report(out, final)
    # A worker ends without the interpreter's teardown, which gloo's threads can abort once a
    # sharded model kept their process group alive to the end (see exit_process).
    exit_process(0)


if __name__ == "__main__":
    main()
