"""The hybrid pipeline: SFT warm-up, rejection-sampling fine-tuning on the model's own trajectories,
then PPO from that checkpoint, on the quickstart's easy sums (every ``a + b`` and ``a - b`` with
single digits, 162 problems of mrlm/Math-v0).

1. **SFT warm-up** of a tiny model on a few demonstrations, which teach the reply format
   (``3 + 4 = 7. \\boxed{7}``) and some of the sums;
2. **collect**: the warm model plays every problem a few times at temperature 1, and the
   trajectories go to ``trajectories.jsonl`` (tokens as sampled, generation mask, rewards);
3. **SFT on the rewarded trajectories** only (``min_reward=1``): the model learns its own correct
   answers, including ones no demonstration showed;
4. **PPO** from that checkpoint on the env's reward, with a separate critic started from the
   policy's weights.

After each stage the script prints the greedy success rate over all 162 problems, and the elapsed
time. The default budgets are small, so that the whole pipeline runs in about 35 seconds on two
idle CPU cores (the warm-up reaches about 25%; the later stages add a point or two at most). The
gains of each stage show with larger budgets: the second command takes about a minute and goes
from 26% after the warm-up to 30% after rejection sampling and 34% after PPO::

    uv run python examples/ppo_hybrid.py
    uv run python examples/ppo_hybrid.py --warmup-steps 300 --samples 8 --ppo-steps 100

Everything lands in ./runs/ppo_hybrid. Stages 3 and 4 from a terminal, on the files it writes::

    uv run mrlm-train sft --data runs/ppo_hybrid/trajectories.jsonl --min-reward 1 \\
        --model.name-or-path runs/ppo_hybrid/warm/final --run.output-dir runs/rft
    uv run mrlm-train ppo --env-kwargs '{"records": "runs/ppo_hybrid/problems.jsonl"}' \\
        --model.name-or-path runs/rft/final --critic model --run.output-dir runs/ppo
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from mrlm.train.algorithms import ppo, sft
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import fresh_dir
from mrlm.train.policy import ModelConfig, load_policy
from mrlm.train.quickstart import ENV_ID, easy_problems, evaluate, write_demonstrations
from mrlm.train.rollout import RolloutEngine, save_jsonl
from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, save_tiny

MAX_NEW_TOKENS = 24
"""Longest reply: a demonstration's reply is about a dozen tokens."""


def collect(model_dir: Path, env_kwargs: dict[str, Any], problems: int, samples: int, path: Path) -> Path:
    """Every problem ``samples`` times at temperature 1, saved as trajectories."""
    model, tokenizer = load_policy(ModelConfig(name_or_path=str(model_dir)))
    sampling = SamplingParams(max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, seed=0)
    generator = HFGenerator(model, tokenizer)
    with RolloutEngine(ENV_ID, generator, tokenizer, sampling, env_kwargs=env_kwargs) as engine:
        trajectories = engine.collect(list(range(problems)), group_size=samples)
    rewarded = sum(t.total_reward >= 1 for t in trajectories)
    print(f"collected {len(trajectories)} trajectories, {rewarded} with reward 1: {path}")
    return save_jsonl(path, trajectories)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--demos", type=int, default=40, help="demonstrations for the warm-up")
    parser.add_argument("--warmup-steps", type=int, default=200, help="SFT warm-up steps")
    parser.add_argument("--samples", type=int, default=4, help="trajectories collected per problem")
    parser.add_argument("--rft-epochs", type=float, default=4, help="passes over the rewarded trajectories")
    parser.add_argument("--ppo-steps", type=int, default=20)
    parser.add_argument("--ppo-prompts", type=int, default=32, help="problems per PPO step")
    parser.add_argument("--ppo-learning-rate", type=float, default=1e-4)
    parser.add_argument("--output-dir", default="runs/ppo_hybrid")
    args = parser.parse_args()

    started = time.perf_counter()
    # A rerun starts afresh; a directory holding anything this script did not write is refused.
    try:
        out = fresh_dir(args.output_dir, "ppo_hybrid.py")
    except OutputDirError as error:
        parser.error(str(error))
    problems = easy_problems(seed=0)
    (out / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    env_kwargs = {"records": str(out / "problems.jsonl")}
    # Seeds 10^9 on serve each problem once (record = seed mod 162) and are never trained on.
    every_problem = range(10**9, 10**9 + len(problems))
    success: dict[str, float] = {}

    def report(stage: str, model_dir: Path) -> None:
        success[stage] = evaluate(model_dir, env_kwargs, every_problem, max_new_tokens=MAX_NEW_TOKENS)
        print(f"{stage}: greedy success {success[stage]:.1%} ({time.perf_counter() - started:.0f}s)")

    # 1. SFT warm-up on demonstrations
    tokenizer = build_tiny_tokenizer()
    initial = save_tiny(out / "initial", build_tiny_model(tokenizer), tokenizer)
    demos = write_demonstrations(env_kwargs, range(args.demos), out / "demonstrations.jsonl")
    warm = sft.train(
        sft.SFTConfig(
            data=str(demos),
            batch_size=32,
            micro_batch_size=32,
            model=ModelConfig(name_or_path=str(initial)),
            run=RunConfig(output_dir=str(out / "warm"), max_steps=args.warmup_steps, progress_bar=False),
            optim=OptimConfig(learning_rate=3e-3, warmup_steps=min(10, args.warmup_steps - 1)),
        )
    )
    report("SFT warm-up", warm)

    # 2. the warm model's own trajectories
    trajectories = collect(warm, env_kwargs, len(problems), args.samples, out / "trajectories.jsonl")

    # 3. SFT on the rewarded ones only (rejection sampling)
    rft = sft.train(
        sft.SFTConfig(
            data=str(trajectories),
            min_reward=1.0,
            batch_size=32,
            micro_batch_size=32,
            epochs=args.rft_epochs,
            model=ModelConfig(name_or_path=str(warm)),
            run=RunConfig(output_dir=str(out / "rft"), progress_bar=False),
            optim=OptimConfig(learning_rate=1e-3),
        )
    )
    report("+ SFT on rewarded trajectories", rft)

    # 4. PPO from the rejection-sampling checkpoint
    final = ppo.train(
        ppo.PPOConfig(
            env_id=ENV_ID,
            env_kwargs=json.dumps(env_kwargs),
            model=ModelConfig(name_or_path=str(rft)),
            critic="model",
            critic_learning_rate=1e-3,
            prompts_per_step=args.ppo_prompts,
            max_new_tokens=MAX_NEW_TOKENS,
            # The critic starts knowing nothing of the task: Monte Carlo returns (lambda 1) keep
            # its early errors out of the advantages.
            lam=1.0,
            ppo_epochs=2,
            mini_batch_size=max(1, args.ppo_prompts // 2),
            micro_batch_size=args.ppo_prompts,
            run=RunConfig(output_dir=str(out / "ppo"), max_steps=args.ppo_steps, progress_bar=False),
            optim=OptimConfig(learning_rate=args.ppo_learning_rate),
        )
    )
    rows = [json.loads(line) for line in (out / "ppo" / "metrics.jsonl").read_text().splitlines()]
    # The reward follows the problems more than the training: seed s serves problem s mod 162, and
    # the first problems are the ones the warm-up had demonstrations for.
    rewards = " ".join(f"{row['reward']:.2f}" for row in rows)
    print(f"PPO reward per step: {rewards}")
    report("+ PPO", final / ppo.POLICY)

    print(f"\nmodels: {warm} (warm-up), {rft} (rejection sampling), {final / ppo.POLICY} (PPO)")


if __name__ == "__main__":
    main()
