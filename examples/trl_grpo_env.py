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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mrlm.envs import EnvArgumentError, UnknownEnvError
from mrlm.envs.remote.errors import RemoteEnvError
from mrlm.train.integrations.trl import env_dataset, env_factory, env_reward

PROG = Path(__file__).name  # errors are named after the script, however it was started


def make_trainer(args: argparse.Namespace, mode: str, output_dir: Path, dataset: Any) -> Any:
    """A GRPOTrainer on the env's ``dataset``, scoring by ``env_reward`` or running ``env_factory``'s tool."""
    from transformers import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    env_kwargs: dict[str, Any] = args.env_kwargs
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


def json_object(text: str) -> dict[str, Any]:
    """``--env-kwargs``: a JSON object, the env's keyword arguments."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(
            f"not JSON ({error.msg}): {text!r}; write an object such as '{{\"level\": 1}}'"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object of the env's arguments, got a {type(value).__name__}: {text!r}"
        )
    return value


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; a bad flag value exits with argparse's one-line error (status 2)."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=("reward", "tools", "both"), default="both")
    parser.add_argument("--env", default="mrlm/Math-v0", help="env id, local or grpc://host:port/...")
    parser.add_argument(
        "--env-kwargs",
        type=json_object,
        default='{"level": 1, "format_reward": 0.1}',
        help="the env's arguments (a JSON object)",
    )
    parser.add_argument("--model", default="tiny", help="'tiny' (built locally), a hub name or a path")
    parser.add_argument("--steps", type=at_least(1), default=3, help="GRPO steps per mode")
    parser.add_argument("--tasks", type=at_least(1), default=64, help="env seeds in the dataset (0 .. n-1)")
    parser.add_argument("--prompts-per-step", type=at_least(1), default=2)
    # GRPO's advantage compares each reply with the others of its task: one alone has none.
    parser.add_argument("--generations", type=at_least(2), default=4, help="replies sampled per task (G)")
    parser.add_argument("--max-completion-length", type=at_least(1), default=96)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", dest="cpu", action="store_false", help="train on the GPU, in bf16")
    parser.add_argument("--output-dir", default="runs/trl_grpo_env")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Train in each mode in turn; an env that cannot be used exits with one line (status 1)."""
    args = parse_args(argv)
    # Built before any model loads: an env that is unknown, multi-agent or refuses its arguments
    # ends the run here in one line.
    try:
        dataset = env_dataset(args.env, range(args.tasks), args.env_kwargs)
    except (UnknownEnvError, EnvArgumentError, RemoteEnvError) as error:
        raise SystemExit(f"{PROG}: error: --env {args.env}: {error}") from None

    # TRL marks environment_factory as experimental and warns on every run.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    modes = ("reward", "tools") if args.mode == "both" else (args.mode,)
    for mode in modes:
        trainer = make_trainer(args, mode, Path(args.output_dir) / mode, dataset)
        trainer.train()
        last = report(trainer, mode)
        trainer.save_model(str(Path(args.output_dir) / mode / "final"))
        print(f"[{mode}] done: {args.steps} steps on {args.env}; last step {json.dumps(last)}")


if __name__ == "__main__":
    main()
