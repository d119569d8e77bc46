"""The smallest PPO run: a tiny local model with a value head on easy arithmetic (mrlm/Math-v0, level 1).

It trains a few steps, then reads the run's ``metrics.jsonl`` and prints the first and last step's
reward, value loss and explained variance of the critic. The tiny model starts from random weights
and never solves a problem in a few steps: every reward is 0, so the critic's target is 0 and its
explained variance is undefined (NaN in the metrics, "n/a" here). See ppo_hybrid.py for a run that
earns rewards, after an SFT warm-up.

Run (about 10 seconds on two CPU cores; the run lands in ./runs/ppo_quickstart)::

    uv run python examples/ppo_quickstart.py --steps 4

The same run from the command line: ``uv run mrlm-train ppo --env-kwargs '{"level": 1}' --run.max-steps 4``.
"""

from __future__ import annotations

import argparse
import json
import math

from mrlm.train.algorithms.ppo import PPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import fresh_dir


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--output-dir", default="runs/ppo_quickstart")
    args = parser.parse_args()

    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    # A rerun starts afresh; a directory holding anything this script did not write is refused.
    try:
        out = fresh_dir(args.output_dir, "ppo_quickstart.py")
    except OutputDirError as error:
        parser.error(str(error))

    config = PPOConfig(
        env_id="mrlm/Math-v0",
        env_kwargs=json.dumps({"level": 1}),
        prompts_per_step=8,
        max_new_tokens=16,
        run=RunConfig(output_dir=str(out), max_steps=args.steps, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )  # the model is the tiny local one and the critic a value head: PPOConfig's defaults
    final = train(config)

    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    for row in (rows[0], rows[-1]):
        # NaN when the returns did not vary over the batch: there was nothing to explain.
        variance = row["value/explained_variance"]
        explained = "n/a" if math.isnan(variance) else f"{variance:+.3f}"
        print(
            f"step {row['step']}: reward {row['reward']:.3f}, value loss {row['value/loss']:.4f}, "
            f"explained variance {explained}"
        )
    print(f"final model (policy and value head): {final}")


if __name__ == "__main__":
    main()
