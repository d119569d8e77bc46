"""TRL's GRPOTrainer on an MRLM env, with ``mrlm.train.integrations.trl`` instead of glue code.

Two ways to hand TRL an env, both shown by default (``--mode both``):

* ``reward``, single turn: ``env_dataset`` turns env seeds into prompts (the env's system prompt and
  task), TRL samples replies, and ``env_reward`` scores each with one step of an env reset to the
  row's seed;
* ``tools``, multi-turn: ``env_factory`` gives TRL one env per rollout; the model answers through the
  ``submit`` tool, reads the env's feedback as the tool's result, and the rollout earns the episode's
  return.

The default model is the tiny one built locally from random weights: it never writes a right answer
or a tool call, so the rewards stay at 0 and a few steps (3 by default, a few seconds each on two CPU
cores) show the plumbing only. For a real run, pass a chat model that can call tools and more steps;
for a served env, its ``grpc://`` id::

    uv run python examples/trl_grpo_env.py                             # both modes, tiny model
    uv run python examples/trl_grpo_env.py --mode tools --steps 200 \\
        --model Qwen/Qwen3-0.6B --max-completion-length 512
    uv run mrlm-envs serve --envs mrlm/Math-v0 &                        # then, on any machine:
    uv run python examples/trl_grpo_env.py --env grpc://127.0.0.1:50051/mrlm/Math-v0
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

from mrlm.train.integrations.trl import env_dataset, env_factory, env_reward


def make_trainer(args: argparse.Namespace, mode: str, output_dir: Path) -> Any:
    """A GRPOTrainer on the env, scoring by ``env_reward`` or running ``env_factory``'s tool."""
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    env_kwargs: dict[str, Any] = json.loads(args.env_kwargs)
    model: Any = args.model
    tokenizer: Any = None  # TRL loads the model's own
    if args.model == "tiny":
        from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

        tokenizer = build_tiny_tokenizer()
        # In tools mode the prompt also lists the tool's schema (~300 tokens of the tiny vocabulary).
        model = build_tiny_model(tokenizer, max_position_embeddings=1024)
    config = GRPOConfig(
        output_dir=str(output_dir),
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts_per_step * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=args.cpu,
        bf16=not args.cpu,
        seed=args.seed,
        disable_tqdm=True,
    )
    dataset = env_dataset(args.env, range(args.tasks), env_kwargs)
    print(f"[{mode}] {len(dataset)} tasks; seed 0 asks: {dataset[0]['prompt'][-1]['content']!r}")
    if mode == "reward":
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=env_reward(args.env, env_kwargs),
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
        )
    else:
        trainer = GRPOTrainer(
            model=model,
            args=config,
            train_dataset=dataset,
            processing_class=tokenizer,
            environment_factory=env_factory(args.env, env_kwargs),
        )
    trainer.remove_callback(PrinterCallback)  # report() prints a line per step instead
    return trainer


def report(trainer: Any, mode: str) -> dict[str, float]:
    """Print each step's mean reward, loss and (tools mode) tool calls per rollout; return the last."""
    rows = [row for row in trainer.state.log_history if "reward" in row]
    for row in rows:
        calls = f", tool calls per rollout {row['tools/call_frequency']:.2f}" if mode == "tools" else ""
        print(f"[{mode}] step {row['step']}: reward {row['reward']:.3f}, loss {row['loss']:.4f}{calls}")
    last = rows[-1]
    assert math.isfinite(last["loss"])
    return {"reward": last["reward"], "loss": last["loss"]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("reward", "tools", "both"), default="both")
    parser.add_argument("--env", default="mrlm/Math-v0", help="env id, local or grpc://host:port/...")
    parser.add_argument(
        "--env-kwargs", default='{"level": 1, "format_reward": 0.1}', help="the env's arguments (JSON)"
    )
    parser.add_argument("--model", default="tiny", help="'tiny' (built locally), a hub name or a path")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per mode")
    parser.add_argument("--tasks", type=int, default=64, help="env seeds in the dataset (0 .. n-1)")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--generations", type=int, default=4, help="replies sampled per task (G)")
    parser.add_argument("--max-completion-length", type=int, default=96)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", dest="cpu", action="store_false", help="train on the GPU, in bf16")
    parser.add_argument("--output-dir", default="runs/trl_grpo_env")
    args = parser.parse_args()

    # TRL marks environment_factory as experimental and warns on every run.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    modes = ("reward", "tools") if args.mode == "both" else (args.mode,)
    for mode in modes:
        trainer = make_trainer(args, mode, Path(args.output_dir) / mode)
        trainer.train()
        last = report(trainer, mode)
        trainer.save_model(str(Path(args.output_dir) / mode / "final"))
        print(f"[{mode}] done: {args.steps} steps on {args.env}; last step {json.dumps(last)}")


if __name__ == "__main__":
    main()
