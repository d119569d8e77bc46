"""PPO's step time and peak memory against GRPO's at the same work, in one run. Prints JSON.

The workload is that of ``benchmarks/grpo_throughput.py`` (same tiny tokenizer and randomly
initialised model built here, the same "What is a+b?" env, the same prompts by seed): every step
samples ``prompts_per_step * group_size`` replies of exactly ``max_new_tokens`` tokens and makes one
optimizer step over them. What differs is the algorithm:

* ``grpo``: group-relative advantages, the sampler's log-probs, one forward and backward;
* ``ppo_value_head``: PPO with a value head on the policy's trunk: one more forward (values at
  sampling time), then the forward and backward that train policy and head together;
* ``ppo_model``: PPO with a separate value model (the policy's architecture and weights): its
  forward at sampling time, then forwards and backwards of both models.

PPO runs one epoch in one mini-batch (``--ppo-epochs`` changes that), so that the work per step is
the same as GRPO's. Each variant runs in a fresh subprocess (so each reports its own peak RSS),
``--rounds`` times, in an order that rotates between rounds; the report keeps each variant's round
with the median step time and the ratios to GRPO's.

Run: ``uv run python benchmarks/ppo_throughput.py --steps 12 --rounds 3`` (and ``--hidden 512
--layers 4 --heads 8 --kv-heads 2`` for a larger model).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

VARIANTS = ("grpo", "ppo_value_head", "ppo_model")
_HERE = Path(__file__).resolve().parent


def _workload() -> Any:
    """benchmarks/grpo_throughput.py as a module: the shared tokenizer, model, prompts and reward."""
    spec = importlib.util.spec_from_file_location("grpo_throughput", _HERE / "grpo_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup-steps", type=int, default=2, help="first steps left out of the steady figures")
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--ppo-epochs", type=int, default=1)
    p.add_argument("--arch", choices=["qwen2", "llama"], default="qwen2")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=None)
    p.add_argument("--vocab-size", type=int, default=512)
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--out-json", default=None)
    args = p.parse_args(argv)
    if args.rounds < 1 or args.steps <= args.warmup_steps:
        p.error("--rounds must be at least 1 and --steps more than --warmup-steps")
    return args


def run_variant(args: argparse.Namespace) -> dict[str, Any]:
    """Train ``args.variant`` in this process; return its step times and peak memory."""
    import gymnasium

    from mrlm.train.algorithms import grpo, ppo
    from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig
    from mrlm.train.loop.metrics import METRICS_FILE, read_metrics
    from mrlm.train.policy import ModelConfig

    workload = _workload()
    # The workload's model options, with the TRL-only ones it also reads.
    args.gradient_checkpointing, args.bf16 = False, False
    work = Path(args.work_dir) / args.variant
    _, vocab, n_params = workload.save_workload(args, work / "model")

    class AddTwo(gymnasium.Env[str, str]):
        def reset(
            self, *, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[str, dict[str, Any]]:
            super().reset(seed=seed)
            a, b = workload.addition(random.Random(seed))
            self.answer = str(a + b)
            return workload.question(a, b), {}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
            return "", workload.reward(action, self.answer), True, False, {}

    gymnasium.register(workload.ENV_ID, entry_point=lambda **_: AddTwo(), disable_env_checker=True)
    batch = args.prompts_per_step * args.group_size
    common: dict[str, Any] = {
        "env_id": workload.ENV_ID,
        "model": ModelConfig(name_or_path=str(work / "model"), dtype="float32"),
        "group_size": args.group_size,
        "prompts_per_step": args.prompts_per_step,
        "max_new_tokens": args.max_new_tokens,
        "ignore_stop": True,
        "micro_batch_size": batch,
        "run": RunConfig(
            output_dir=str(work / "run"), max_steps=args.steps, seed=args.seed, progress_bar=False
        ),
        "optim": OptimConfig(learning_rate=args.lr, lr_schedule="linear", max_grad_norm=1.0),
        "dist": DistributedConfig(cpu=True),
    }
    started = time.perf_counter()
    if args.variant == "grpo":
        grpo.train(grpo.GRPOConfig(aggregation="token_mean", **common))
    else:
        critic: Literal["value_head", "model"] = "value_head" if args.variant == "ppo_value_head" else "model"
        ppo.train(ppo.PPOConfig(critic=critic, ppo_epochs=args.ppo_epochs, mini_batch_size=batch, **common))
    wall = time.perf_counter() - started
    rows = read_metrics(work / "run" / METRICS_FILE)
    steady = rows[args.warmup_steps :]
    step_s = [row["step_s"] for row in steady]
    rollout_s = [row["rollout_s"] for row in steady]
    return {
        "variant": args.variant,
        "n_params": n_params,
        "vocab": vocab,
        "step_s_median_steady": round(statistics.median(step_s), 4),
        "step_s_mean_steady": round(statistics.mean(step_s), 4),
        "rollout_s_median_steady": round(statistics.median(rollout_s), 4),
        "update_s_median_steady": round(
            statistics.median(s - r for s, r in zip(step_s, rollout_s, strict=True)), 4
        ),
        "tokens_per_step": rows[-1]["tokens"],
        "peak_rss_mb": round(workload.peak_rss_mb(), 1),
        "train_wall_s": round(wall, 2),
    }


def _child(args: argparse.Namespace, variant: str, index: int) -> dict[str, Any]:
    work = Path(args.work_dir) / f"round-{index}"  # a run refuses a directory with older checkpoints
    out = work / f"{variant}.json"
    argv = [sys.executable, __file__, "--variant", variant, "--out-json", str(out), "--work-dir", str(work)]
    for name in (
        "steps", "warmup_steps", "prompts_per_step", "group_size", "max_new_tokens", "ppo_epochs", "arch",
        "hidden", "layers", "heads", "kv_heads", "vocab_size", "max_positions", "lr", "seed",
    ):  # fmt: skip
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.intermediate is not None:
        argv += ["--intermediate", str(args.intermediate)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{variant} failed:\n{result.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    rounds: list[dict[str, Any]] = []
    for index in range(args.rounds):
        order = VARIANTS[index % 3 :] + VARIANTS[: index % 3]
        rounds.append({v: _child(args, v, index) for v in order})
    medians = {}
    for variant in VARIANTS:
        reports = sorted((r[variant] for r in rounds), key=lambda r: r["step_s_median_steady"])
        medians[variant] = reports[len(reports) // 2]
    base = medians["grpo"]["step_s_median_steady"]
    return {
        **medians,
        "rounds": [{v: r[v]["step_s_median_steady"] for v in VARIANTS} for r in rounds],
        "comparison": {
            "ppo_value_head_over_grpo_step_time": round(
                medians["ppo_value_head"]["step_s_median_steady"] / base, 3
            ),
            "ppo_model_over_grpo_step_time": round(medians["ppo_model"]["step_s_median_steady"] / base, 3),
            "peak_rss_mb": {v: medians[v]["peak_rss_mb"] for v in VARIANTS},
            "target": "ppo_value_head_over_grpo_step_time <= 1.5",
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mrlm-ppo-bench-") as scratch:
        args.work_dir = args.work_dir or scratch
        report = run_variant(args) if args.variant != "all" else run_all(args)
    text = json.dumps(report, indent=2)
    if args.out_json:
        Path(args.out_json).write_text(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
