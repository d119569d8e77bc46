"""Peak memory of MAGRPO with one LoRA adapter per agent on one frozen base, by number of agents. Prints JSON.

The question: does ``policies="lora"`` keep N agents' memory close to one model's? Each
configuration trains a few MAGRPO steps in a fresh process and reports that process's peak resident
memory (``ru_maxrss``):

* ``lora:1`` and ``lora:4``: one base with one adapter per agent, 1 and 4 agents;
* ``per_agent:4``: 4 agents with a full model each (weights, gradients and AdamW states per agent),
  for contrast.

The work: a randomly initialised Qwen2 (``--size``, default hidden 512 / 4 layers, on the tiny
tokenizer's 512 tokens) saved once and loaded by every run; the task "What is a+b?" as a
:class:`~mrlm.envs.DatasetTaskEnv` with one prompt per agent, the team paid when a+b appears in the
joined replies. TeamSum-v0 takes 2 to 4 agents, so it cannot give the one-agent point; this task is
the same env for any number of agents. Per step: ``--prompts-per-step`` tasks, ``--group-size``
replies per agent of exactly ``--max-new-tokens`` tokens, fp32 on CPU, KL to the base (with LoRA,
the base itself with the adapters off; with full models, a frozen copy per agent) when
``--kl-coef`` > 0.

``python_baseline_mb`` is the peak of a process that imports the same libraries and builds nothing
(the interpreter, torch, transformers, peft): ``above_baseline`` figures subtract it, so at small
sizes the model's share is visible. Target: ``lora:4`` at most 1.5 times the peak of ``lora:1``.

Run (about a minute on two CPU cores)::

    uv run python benchmarks/magrpo_lora_memory.py
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CONFIGS = ("lora:1", "lora:4", "per_agent:4")
TARGET_RATIO = 1.5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--configs", nargs="+", default=list(CONFIGS), help="POLICIES:AGENTS, each its own process"
    )
    p.add_argument("--size", default="512x4", help="HIDDENxLAYERS of the Qwen2 model")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--prompts-per-step", type=int, default=1)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--lora-r", type=int, default=8)
    p.add_argument("--kl-coef", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # one configuration, in this process
    p.add_argument("--model-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--work-dir", default=None, help="where the model and runs go (default: a temporary one)")
    p.add_argument("--out-json", default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    for config in [*args.configs, *([args.child] if args.child not in (None, "baseline") else [])]:
        policies, _, agents = config.partition(":")
        if policies not in ("lora", "per_agent", "shared") or not agents.isdigit() or int(agents) < 1:
            p.error(f"a configuration is POLICIES:AGENTS such as lora:4, got {config!r}")
    return args


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def prompt(record: Mapping[str, Any], k: int, num_agents: int) -> str:
    return f"What is {record['a']}+{record['b']}? You are agent {k + 1} of {num_agents}."


def team_reward(replies: list[str], record: Mapping[str, Any]) -> float:
    return float(str(int(record["a"]) + int(record["b"])) in " ".join(replies))


def imports() -> None:
    """What every configuration imports, so the baseline process carries the same libraries."""
    import peft  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from mrlm.train.algorithms import magrpo  # noqa: F401


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    """Train one configuration in this process; report its peak memory and what it trained."""
    imports()
    if args.child == "baseline":
        return {"config": "baseline", "peak_rss_mb": round(peak_rss_mb(), 1)}
    from mrlm.envs import DatasetTaskEnv
    from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
    from mrlm.train.loop import OptimConfig, RunConfig
    from mrlm.train.loop.metrics import METRICS_FILE, read_metrics
    from mrlm.train.policy import ModelConfig

    policies, _, agents = args.child.partition(":")
    num_agents = int(agents)
    records = [{"a": a, "b": (3 * a + 1) % 10} for a in range(10)]

    def make_env() -> DatasetTaskEnv:
        formatters = [lambda r, k=k: prompt(r, k, num_agents) for k in range(num_agents)]
        return DatasetTaskEnv(records, formatters, team_reward)

    run_dir = Path(args.work_dir) / args.child.replace(":", "-")
    config = MAGRPOConfig(
        env_id="benchmark/AddTogether",
        policies=policies,
        model=ModelConfig(name_or_path=args.model_dir, lora_r=args.lora_r if policies == "lora" else 0),
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=args.max_new_tokens,
        ignore_stop=True,
        kl_coef=args.kl_coef,
        run=RunConfig(output_dir=str(run_dir), max_steps=args.steps, seed=args.seed, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-4),
    )
    started = time.perf_counter()
    final = train(config, env=make_env)
    rows = read_metrics(run_dir / METRICS_FILE)
    saved = sum(path.stat().st_size for path in final.rglob("*.safetensors"))
    return {
        "config": args.child,
        "policies": policies,
        "agents": num_agents,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "steps_run": len(rows),
        "step_s": [round(row["step_s"], 3) for row in rows],
        "train_wall_s": round(time.perf_counter() - started, 2),
        "final_weights_mb": round(saved / 2**20, 2),
    }


def child(args: argparse.Namespace, config: str, model_dir: Path, work: Path) -> dict[str, Any]:
    """One configuration in a fresh process (its ``ru_maxrss`` is its own)."""
    out = work / f"{config.replace(':', '-')}.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", config, "--model-dir", str(model_dir)]
    argv += ["--work-dir", str(work), "--out-json", str(out), "--steps", str(args.steps)]
    argv += ["--prompts-per-step", str(args.prompts_per_step), "--group-size", str(args.group_size)]
    argv += ["--max-new-tokens", str(args.max_new_tokens), "--lora-r", str(args.lora_r)]
    argv += ["--kl-coef", str(args.kl_coef), "--seed", str(args.seed)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"configuration {config} failed:\n{result.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def build_model(size: str, seed: int, directory: Path) -> dict[str, Any]:
    """The Qwen2 model every configuration loads, saved to ``directory``."""
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer, count_parameters, save_tiny

    hidden, _, layers = size.partition("x")
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(tokenizer, hidden_size=int(hidden), num_layers=int(layers), seed=seed)
    save_tiny(directory, model, tokenizer)
    return {
        "hidden": int(hidden),
        "layers": int(layers),
        "vocab": len(tokenizer),
        "params": count_parameters(model),
    }


def run_all(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work_dir)
    model = build_model(args.size, args.seed, work / "model")
    baseline = child(args, "baseline", work / "model", work)["peak_rss_mb"]
    runs = {config: child(args, config, work / "model", work) for config in args.configs}
    for run in runs.values():
        run["peak_above_baseline_mb"] = round(run["peak_rss_mb"] - baseline, 1)
    report: dict[str, Any] = {
        "model": model | {"bytes_fp32_mb": round(model["params"] * 4 / 2**20, 1)},
        "workload": {
            "steps": args.steps,
            "prompts_per_step": args.prompts_per_step,
            "group_size": args.group_size,
            "max_new_tokens": args.max_new_tokens,
            "lora_r": args.lora_r,
            "kl_coef": args.kl_coef,
        },
        "python_baseline_mb": baseline,
        "runs": runs,
    }
    if "lora:1" in runs and "lora:4" in runs:
        one, four = runs["lora:1"], runs["lora:4"]
        ratio = four["peak_rss_mb"] / one["peak_rss_mb"]
        report["lora4_over_lora1"] = {
            "peak_rss": round(ratio, 3),
            "peak_above_baseline": round(four["peak_above_baseline_mb"] / one["peak_above_baseline_mb"], 3),
            f"target peak_rss <= {TARGET_RATIO}": ratio <= TARGET_RATIO,
        }
        if "per_agent:4" in runs:
            full = runs["per_agent:4"]
            report["per_agent4_over_lora1"] = {
                "peak_rss": round(full["peak_rss_mb"] / one["peak_rss_mb"], 3),
                "peak_above_baseline": round(
                    full["peak_above_baseline_mb"] / one["peak_above_baseline_mb"], 3
                ),
            }
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="magrpo_lora_memory_") as scratch:
        if args.work_dir is None:
            args.work_dir = scratch
        report = run_child(args) if args.child else run_all(args)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(report, indent=2)
    if args.out_json:
        Path(args.out_json).write_text(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
