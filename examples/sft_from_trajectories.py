"""Rejection-sampling fine-tuning: keep the episodes the environment rewarded, and train on them.

1. a tiny model gets a short SFT warm-up on a few demonstrations of easy sums (the quickstart's task);
2. it plays every problem a few times at temperature 1, and the trajectories go to
   ``trajectories.jsonl`` (tokens exactly as sampled, generation mask, rewards);
3. SFT on that file, keeping only the trajectories with reward 1 (``min_reward``), teaches the
   model its own correct answers, including ones no demonstration showed.

Step 3 from a terminal, on the file this script writes::

    uv run mrlm-train sft --data trajectories.jsonl --min-reward 1 --model.name-or-path runs/rft/warm/final

Everything is written under ./runs/rft and ./trajectories.jsonl; it takes well under a minute on a CPU.

    uv run python examples/sft_from_trajectories.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mrlm.train.algorithms import sft
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.quickstart import ENV_ID, easy_problems, evaluate, write_demonstrations
from mrlm.train.rollout import RolloutEngine, save_jsonl
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--warmup-steps", type=int, default=150, help="SFT warm-up steps on demonstrations")
    parser.add_argument("--samples", type=int, default=4, help="episodes played per problem")
    parser.add_argument("--epochs", type=float, default=4, help="SFT passes over the rewarded trajectories")
    args = parser.parse_args()

    out = Path("runs/rft")
    out.mkdir(parents=True, exist_ok=True)
    problems = easy_problems(seed=0)
    (out / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    env_kwargs = {"records": str(out / "problems.jsonl")}
    every_problem = range(10**9, 10**9 + len(problems))

    # 1. warm-up on 40 demonstrations
    tokenizer = build_tiny_tokenizer()
    initial = save_tiny(out / "initial", build_tiny_model(tokenizer), tokenizer)
    demos = write_demonstrations(env_kwargs, range(40), out / "demonstrations.jsonl")
    warm = sft.train(
        sft.SFTConfig(
            data=str(demos),
            batch_size=32,
            micro_batch_size=32,
            model=ModelConfig(name_or_path=str(initial)),
            run=RunConfig(output_dir=str(out / "warm"), max_steps=args.warmup_steps, progress_bar=False),
            optim=OptimConfig(learning_rate=3e-3, warmup_steps=10),
        )
    )
    before = evaluate(warm, env_kwargs, every_problem, max_new_tokens=24)

    # 2. play every problem a few times (four by default) and keep the trajectories
    model, tokenizer = load_policy(ModelConfig(name_or_path=str(warm)))
    sampling = SamplingParams(max_new_tokens=24, temperature=1.0, seed=0)
    with RolloutEngine(
        ENV_ID, HFGenerator(model, tokenizer), tokenizer, sampling, env_kwargs=env_kwargs
    ) as engine:
        trajectories = engine.collect(list(range(len(problems))), group_size=args.samples)
    path = save_jsonl("trajectories.jsonl", trajectories)
    rewarded = sum(t.total_reward >= 1 for t in trajectories)
    print(f"{path}: {len(trajectories)} trajectories, {rewarded} with reward 1")

    # 3. SFT on the rewarded ones only
    final = sft.train(
        sft.SFTConfig(
            data=str(path),
            min_reward=1.0,
            batch_size=32,
            micro_batch_size=32,
            epochs=args.epochs,
            model=ModelConfig(name_or_path=str(warm)),
            run=RunConfig(output_dir=str(out / "rft"), progress_bar=False),
            optim=OptimConfig(learning_rate=1e-3),
        )
    )
    after = evaluate(final, env_kwargs, every_problem, max_new_tokens=24)
    print(
        f"greedy success on all {len(problems)} problems: {before:.1%} after the warm-up, {after:.1%} after"
    )
    print(f"models: {warm} (warm-up), {final} (rejection-sampling fine-tuned)")


if __name__ == "__main__":
    main()
