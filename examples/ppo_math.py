"""Math with PPO over two turns: after a wrong answer the env says so, and a second try is paid too.

1. a tiny model gets the quickstart's SFT warm-up (one-turn demonstrations of easy sums), so it
   knows the answer format but has never seen a second turn;
2. PPO trains it on ``mrlm/Math-v0`` with ``max_turns=2``: a wrong first answer gets the feedback
   "That answer is not correct..." and one more reply. GAE runs over the model's tokens of both
   turns (the feedback is not an action), so the first turn is credited with the second's reward;
3. the rollouts log ``success/turn1`` (first answers right) and ``success/turn2`` (second answers
   right, among the episodes that needed one); the script prints both over the first and the last
   steps.

With the defaults it takes about two and a half minutes on two CPU cores, and the second turn's
success about doubles (5% -> 10-15% in one run here) while the first turn's rises too.

    uv run python examples/ppo_math.py            # --steps 60 by default
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mrlm.train.algorithms import ppo, sft
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.policy import ModelConfig
from mrlm.train.quickstart import easy_problems, write_demonstrations
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="PPO steps")
    parser.add_argument("--sft-steps", type=int, default=300, help="warm-up steps")
    parser.add_argument("--problems-per-step", type=int, default=128)
    parser.add_argument("--output-dir", default="runs/ppo_math")
    args = parser.parse_args()
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in easy_problems(seed=0)))
    records = str(out / "problems.jsonl")

    # 1. the one-turn warm-up
    tokenizer = build_tiny_tokenizer()
    initial = save_tiny(out / "initial", build_tiny_model(tokenizer), tokenizer)
    demos = write_demonstrations({"records": records}, range(60), out / "demonstrations.jsonl")
    warm = sft.train(
        sft.SFTConfig(
            data=str(demos),
            batch_size=32,
            micro_batch_size=32,
            model=ModelConfig(name_or_path=str(initial)),
            run=RunConfig(output_dir=str(out / "sft"), max_steps=args.sft_steps, progress_bar=False),
            optim=OptimConfig(learning_rate=3e-3, warmup_steps=min(10, args.sft_steps - 1)),
        )
    )

    # 2. PPO over two turns, with a separate critic started from the warm model
    final = ppo.train(
        ppo.PPOConfig(
            env_id="mrlm/Math-v0",
            env_kwargs=json.dumps({"records": records, "max_turns": 2}),
            max_turns=2,
            model=ModelConfig(name_or_path=str(warm)),
            critic="model",
            critic_learning_rate=1e-3,
            prompts_per_step=args.problems_per_step,
            max_new_tokens=24,
            lam=1.0,
            ppo_epochs=2,
            mini_batch_size=max(1, args.problems_per_step // 2),
            micro_batch_size=args.problems_per_step,
            run=RunConfig(output_dir=str(out / "ppo"), max_steps=args.steps, progress_bar=False),
            optim=OptimConfig(learning_rate=5e-4),
        )
    )

    # 3. each turn's success, early and late
    rows = [json.loads(line) for line in (out / "ppo" / "metrics.jsonl").read_text().splitlines()]
    window = max(1, min(10, len(rows) // 3))
    for label, part in (("first", rows[:window]), ("last", rows[-window:])):
        shares = {
            key: sum(row.get(key, 0.0) for row in part) / len(part)
            for key in ("success/turn1", "success/turn2")
        }
        print(
            f"{label} {len(part)} steps: first answers right {shares['success/turn1']:.1%}, "
            f"second answers right {shares['success/turn2']:.1%}"
        )
    print(f"policy: {final / ppo.POLICY}, critic: {final / ppo.CRITIC}")


if __name__ == "__main__":
    main()
