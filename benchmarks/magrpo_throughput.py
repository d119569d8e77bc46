"""MAGRPO steps per second and peak memory of MRLM and of CoMLRL on the same multi-agent work. Prints JSON.

The work, at each model size:

* a byte-level BPE tokenizer trained on synthetic arithmetic strings and a randomly initialised
  Qwen2 (or Llama) built from a config, both saved with ``save_pretrained`` and loaded back from that
  directory, once per agent: ``--num-agents`` separate models, each with its own AdamW;
* the cooperative task "What is a+b?" (a, b in 0..20): agent ``k`` is asked for its share ("state the
  first number", "... the second ..."); the team's reward is 1 when a+b appears as a number in the
  agents' replies joined by a space, or when the first numbers the agents state sum to a+b;
* one step = ``prompts_per_step`` tasks, ``group_size`` replies per agent and task (reply ``j`` of
  every agent forms joint reply ``j``), every reply exactly ``max_new_tokens`` tokens (stop tokens
  ignored unless ``--allow-early-eos``), sampled at ``temperature`` with ``top_p`` 1; group-mean
  advantages scaled by the group's std; one optimizer step per agent; no KL; fp32 on CPU.

MRLM builds the task as a :class:`~mrlm.envs.DatasetTaskEnv` (records, one prompt formatter per
agent, the team reward) and trains it with :func:`mrlm.train.algorithms.magrpo.train`
(``policies="per_agent"``: each agent's prompt is its formatter's text in the chat template, the
same tokens as CoMLRL's); its step times (``step_s``, ``rollout_s``) come from the run's
``metrics.jsonl``. CoMLRL runs ``MAGRPOTrainer`` through an anchor script given by
``--comlrl-anchor``, which builds the same workload, times it and writes its own JSON (the keys read
from it are listed in the report as ``anchor_keys``); without that script the CoMLRL side is skipped
and the report says why.

Every run is a fresh subprocess, so each side's ``peak_rss_mb`` (``ru_maxrss``) is its own. At each
size the two sides alternate for ``--rounds`` rounds (the first side switches every round), so both
see the same machine load; each side's entry is its round with the median step time, and the
ratio is MRLM's steps/s over CoMLRL's, per round, then the median over rounds. Each round also
gives each side's ``foreign_cpu_s``: CPU seconds other processes used while it trained; a round
where that is more than a second or so was slowed by its neighbours.

Side by side at both reference sizes::

    uv run python benchmarks/magrpo_throughput.py --steps 12 --rounds 3 --sizes 128x2 512x4
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
LIBRARIES = ("mrlm", "comlrl")
#: Where the CoMLRL anchor script is looked for when --comlrl-anchor is not given.
DEFAULT_ANCHOR = Path("/work/shared/bench/comlrl_magrpo_anchor.py")
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
#: What the report reads from the anchor's JSON.
ANCHOR_KEYS = (
    "results.step_s_median_steady",
    "results.step_s_mean_steady",
    "results.peak_rss_mb",
    "results.rss_after_init_mb",
    "results.reward_mean_all",
    "results.mean_completion_len",
    "results.optimizer_steps_per_agent",
    "settings.vocab",
    "settings.n_params_per_agent",
    "settings.distinct_agent_models",
    "versions",
    "diagnostics",
    "per_step_s",
    "per_step_gen_s",
    "per_step_update_s",
)


def _workload() -> Any:
    """benchmarks/grpo_throughput.py as a module: the anchor's tokenizer and model, the terms of a
    task and the clocks."""
    spec = importlib.util.spec_from_file_location("grpo_throughput", _HERE / "grpo_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def size(text: str) -> tuple[int, int]:
    """``HIDDENxLAYERS`` (``128x2``) as two ints."""
    match = re.fullmatch(r"(\d+)x(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"a size is HIDDENxLAYERS, such as 128x2; got {text!r}")
    return int(match[1]), int(match[2])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # what is measured
    p.add_argument("--library", choices=["mrlm", "comlrl", "both"], default="both", help="the sides run")
    p.add_argument("--rounds", type=int, default=1, help="runs of each side at each size")
    p.add_argument(
        "--sizes", type=size, nargs="+", default=[(128, 2), (512, 4)], help="model sizes, HIDDENxLAYERS"
    )
    p.add_argument(
        "--comlrl-anchor",
        type=Path,
        default=DEFAULT_ANCHOR if DEFAULT_ANCHOR.is_file() else None,
        help=f"the script running CoMLRL's MAGRPOTrainer (default {DEFAULT_ANCHOR} if it exists)",
    )
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # one MRLM run, here
    # workload
    p.add_argument("--steps", type=int, default=12, help="optimizer steps (per agent)")
    p.add_argument("--warmup-steps", type=int, default=2, help="first steps left out of the steady figures")
    p.add_argument("--num-agents", type=int, default=2)
    p.add_argument("--prompts-per-step", type=int, default=1, help="tasks per optimizer step")
    p.add_argument("--group-size", type=int, default=4, help="replies per agent and task")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument(
        "--allow-early-eos",
        action="store_true",
        help="let replies end at a stop token (default: every reply has exactly max_new_tokens tokens)",
    )
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    # model (besides the size)
    p.add_argument("--arch", choices=["qwen2", "llama"], default="qwen2")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=None, help="MLP width (default 4 * hidden)")
    p.add_argument("--vocab-size", type=int, default=512, help="BPE vocabulary to train (may end smaller)")
    p.add_argument("--max-positions", type=int, default=512)
    # algorithm
    p.add_argument("--lr", type=float, default=1e-4)
    # runtime
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: CoMLRL all cores, MRLM the cores other processes leave free)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--work-dir", default=None, help="where models and runs go (default: a fresh temporary one)"
    )
    p.add_argument("--out-json", default=None, help="also write the JSON here")
    p.add_argument("--quiet", action="store_true", help="silence library logging and warnings")
    args = p.parse_args(argv)
    if min(args.rounds, args.steps, args.num_agents) < 1 or args.warmup_steps < 0:
        p.error("--rounds, --steps and --num-agents must be at least 1, --warmup-steps at least 0")
    if args.num_agents > len(ORDINALS):
        p.error(f"at most {len(ORDINALS)} agents (each is asked for the k-th number)")
    return args


# ---------------------------------------------------------------------------------- the task


def prompt(record: Mapping[str, Any], k: int, num_agents: int) -> str:
    """Agent ``k``'s question: the sum, and its share of the job."""
    return (
        f"What is {record['a']}+{record['b']}? You are agent {k + 1} of {num_agents}; "
        f"state the {ORDINALS[k]} number."
    )


def team_reward(replies: list[str], record: Mapping[str, Any]) -> float:
    """1 if a+b is a number in the joined replies, or the agents' first numbers sum to a+b; else 0."""
    target = int(record["a"]) + int(record["b"])
    numbers = re.findall(r"\d+", " ".join(replies))
    firsts = [re.findall(r"\d+", reply) for reply in replies]
    split = all(firsts) and sum(int(found[0]) for found in firsts) == target
    return 1.0 if str(target) in numbers or split else 0.0


# ---------------------------------------------------------------------------------- MRLM


def run_mrlm(args: argparse.Namespace) -> dict[str, Any]:
    """Train MAGRPO with MRLM in this process at the first of ``--sizes``; return its report."""
    import torch

    from mrlm.envs import DatasetTaskEnv
    from mrlm.train.algorithms.magrpo import MAGRPOConfig, train
    from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig
    from mrlm.train.loop.metrics import METRICS_FILE, read_metrics
    from mrlm.train.policy import ModelConfig

    workload = _workload()
    if args.quiet:
        importlib.import_module("transformers").logging.set_verbosity_error()
    hidden, layers = args.sizes[0]
    work = Path(args.work_dir)
    model_dir, run_dir = work / "model", work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)  # a run refuses a directory holding older checkpoints

    # The anchor's workload from the same seed: its tokenizer (byte-level BPE on arithmetic, with its
    # chat template) and its model, so both sides train the same weights on the same tokens.
    shape = argparse.Namespace(**{**vars(args), "hidden": hidden, "layers": layers})
    rng, vocab, n_params = workload.save_workload(shape, model_dir)
    records = []
    for _ in range(args.steps * args.prompts_per_step):  # reset seeds 0, 1, ... serve them in turn
        a, b = workload.addition(rng)
        records.append({"a": a, "b": b})

    rss_at_start: list[float] = []
    seen = {"joint_replies": 0, "reward_sum": 0.0}

    def formatter(k: int) -> Any:
        def format_prompt(record: Mapping[str, Any]) -> str:
            if not rss_at_start:  # the first reset comes once the trainer is set up
                rss_at_start.append(workload.rss_mb())
            return prompt(record, k, args.num_agents)

        return format_prompt

    def counted_reward(replies: list[str], record: Mapping[str, Any]) -> float:
        value = team_reward(replies, record)
        seen["joint_replies"] += 1
        seen["reward_sum"] += value
        return value

    def make_env() -> DatasetTaskEnv:
        return DatasetTaskEnv(records, [formatter(k) for k in range(args.num_agents)], counted_reward)

    config = MAGRPOConfig(
        env_id="benchmark/AddTogether",
        policies="per_agent",
        model=ModelConfig(name_or_path=str(model_dir), dtype="float32"),
        group_size=args.group_size,
        prompts_per_step=args.prompts_per_step,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        ignore_stop=not args.allow_early_eos,
        micro_batch_size=args.prompts_per_step * args.group_size,  # one pass per policy and step
        run=RunConfig(output_dir=str(run_dir), max_steps=args.steps, seed=args.seed, progress_bar=False),
        optim=OptimConfig(learning_rate=args.lr),
        # Without --threads, MRLM's default: follow the cores that other processes leave free.
        dist=DistributedConfig(cpu=True, cpu_threads=args.threads or 0),
    )
    with workload.Clock() as clock:
        train(config, env=make_env)
    rows = read_metrics(run_dir / METRICS_FILE)
    step_s = [row["step_s"] for row in rows]
    rollout_s = [row["rollout_s"] for row in rows]
    w = min(args.warmup_steps, max(0, len(rows) - 1))
    update_s = [s - r for s, r in zip(step_s[w:], rollout_s[w:], strict=True)]
    policies = {key.split("/")[1] for key in rows[-1] if key.startswith("policy/")}  # with several
    return {
        "library": "mrlm",
        "versions": {
            "mrlm-train": importlib.metadata.version("mrlm-train"),
            "transformers": importlib.metadata.version("transformers"),
            "torch": torch.__version__,
            "python": sys.version.split()[0],
        },
        "torch_threads": torch.get_num_threads(),
        "hidden": hidden,
        "layers": layers,
        "vocab": vocab,
        "n_params_per_agent": n_params,
        "distinct_agent_models": len(policies) or 1,
        "steps_run": len(rows),
        **steady_figures(step_s[w:], rollout_s[w:], update_s),
        "mean_completion_len": round(statistics.mean(row["reply_tokens"] for row in rows), 2),
        "reward_mean_all": round(seen["reward_sum"] / max(1, seen["joint_replies"]), 4),
        "rss_after_init_mb": round(rss_at_start[0], 1) if rss_at_start else None,
        "peak_rss_mb": round(workload.peak_rss_mb(), 1),
        "train_wall_s": round(clock.wall, 2),
        "diagnostics": clock.diagnostics | {"foreign_cpu_s_during_train": foreign_cpu_s(clock.diagnostics)},
        "per_step_s": [round(x, 4) for x in step_s],
        "per_step_rollout_s": [round(x, 4) for x in rollout_s],
    }


def foreign_cpu_s(diagnostics: dict[str, Any]) -> float | None:
    """Busy CPU seconds of the machine during training that were not this process's (as the anchor
    reports them): more than a second or so means the neighbours slowed this run down."""
    host = diagnostics.get("host_cpu_s_during_train")
    if not host:
        return None
    return round(host["user"] + host["system"] - diagnostics["proc_cpu_s"], 2)


def steady_figures(step_s: list[float], rollout_s: list[float], update_s: list[float]) -> dict[str, Any]:
    """Median and mean step time after warm-up, steps/s, and the step's parts (rollout, update)."""
    median = statistics.median(step_s)
    return {
        "step_s_median_steady": round(median, 4),
        "step_s_mean_steady": round(statistics.mean(step_s), 4),
        "steps_per_s": round(1.0 / median, 3),
        "rollout_s_median_steady": round(statistics.median(rollout_s), 4),
        "update_s_median_steady": round(statistics.median(update_s), 4),
        "rollout_fraction_steady": round(sum(rollout_s) / sum(step_s), 3),
        "update_fraction_steady": round(sum(update_s) / sum(step_s), 3),
    }


# ---------------------------------------------------------------------------------- side by side


def mrlm_child(args: argparse.Namespace, hidden: int, layers: int, work: Path) -> dict[str, Any]:
    """One MRLM run in a fresh process: this script with ``--in-process`` at one size."""
    out = work / "mrlm.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--in-process", "--sizes", f"{hidden}x{layers}"]
    argv += ["--work-dir", str(work), "--out-json", str(out), *shared_flags(args)]
    if args.quiet:
        argv.append("--quiet")
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the MRLM run failed:\n{result.stderr[-4000:]}")
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def comlrl_child(args: argparse.Namespace, hidden: int, layers: int, work: Path) -> dict[str, Any]:
    """One CoMLRL run in a fresh process: the anchor script, with the same flags; its report in the
    shape of MRLM's (rollout = its generation, update = its optimizer updates)."""
    out = work / "comlrl.json"
    argv = [sys.executable, str(args.comlrl_anchor), "--hidden", str(hidden), "--layers", str(layers)]
    argv += ["--work-dir", str(work), "--out-json", str(out), "--quiet", *shared_flags(args)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the CoMLRL anchor failed:\n{result.stderr[-4000:]}")
    anchor = json.loads(out.read_text())
    results, settings = anchor["results"], anchor["settings"]
    step_s, gen_s, update_s = anchor["per_step_s"], anchor["per_step_gen_s"], anchor["per_step_update_s"]
    w = min(args.warmup_steps, max(0, len(step_s) - 1))
    figures = steady_figures(step_s[w:], gen_s[w:], update_s[w:])
    # Step times as the anchor computed them (from unrounded times; the per-step lists are rounded).
    figures["step_s_median_steady"] = results["step_s_median_steady"]
    figures["step_s_mean_steady"] = results["step_s_mean_steady"]
    figures["steps_per_s"] = round(1.0 / results["step_s_median_steady"], 3)
    return {
        "library": "comlrl",
        "versions": anchor["versions"],
        "torch_threads": anchor["torch_threads"],
        "hidden": settings["hidden"],
        "layers": settings["layers"],
        "vocab": settings["vocab"],
        "n_params_per_agent": settings["n_params_per_agent"],
        "distinct_agent_models": settings["distinct_agent_models"],
        "steps_run": results["steps_run"],
        "optimizer_steps_per_agent": results["optimizer_steps_per_agent"],
        **figures,
        "mean_completion_len": results["mean_completion_len"],
        "reward_mean_all": results["reward_mean_all"],
        "rss_after_init_mb": results["rss_after_init_mb"],
        "peak_rss_mb": results["peak_rss_mb"],
        "train_wall_s": results["train_wall_s"],
        "diagnostics": anchor["diagnostics"],
        "per_step_s": step_s,
        "per_step_rollout_s": gen_s,
    }


def shared_flags(args: argparse.Namespace) -> list[str]:
    """The workload flags both sides take, with the same names."""
    argv: list[str] = []
    for name in (
        "steps", "warmup_steps", "num_agents", "prompts_per_step", "group_size", "max_new_tokens",
        "temperature", "top_p", "arch", "heads", "kv_heads", "vocab_size", "max_positions", "lr", "seed",
    ):  # fmt: skip
        argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    for name in ("intermediate", "threads"):
        if getattr(args, name) is not None:
            argv += [f"--{name}", str(getattr(args, name))]
    if args.allow_early_eos:
        argv.append("--allow-early-eos")
    return argv


def comlrl_missing(args: argparse.Namespace) -> str | None:
    """Why the CoMLRL side cannot run, or None."""
    if args.comlrl_anchor is None:
        return f"no CoMLRL anchor script: {DEFAULT_ANCHOR} does not exist and --comlrl-anchor was not given"
    if not Path(args.comlrl_anchor).is_file():
        return f"the CoMLRL anchor script {args.comlrl_anchor} does not exist"
    if importlib.util.find_spec("comlrl") is None:
        return "comlrl is not importable: it is a dev dependency (uv sync installs it)"
    return None


def compare(args: argparse.Namespace, hidden: int, layers: int, libraries: list[str]) -> dict[str, Any]:
    """Both sides at one size, ``--rounds`` rounds, the first side alternating."""
    runners = {"mrlm": mrlm_child, "comlrl": comlrl_child}
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = libraries if r % 2 == 0 else libraries[::-1]
        reports = {}
        for library in order:
            work = Path(args.work_dir) / f"{hidden}x{layers}" / f"round-{r}" / library
            reports[library] = runners[library](args, hidden, layers, work)
        rounds.append({library: reports[library] for library in libraries} | {"order": order})

    def step_time(report: dict[str, Any]) -> float:
        return float(report["step_s_median_steady"])

    output: dict[str, Any] = {}
    for library in libraries:
        ordered = sorted((rnd[library] for rnd in rounds), key=step_time)
        output[library] = ordered[(len(ordered) - 1) // 2]
    output["rounds"] = [
        {"order": rnd["order"]}
        | {
            library: {
                key: rnd[library][key]
                for key in ("step_s_median_steady", "rollout_s_median_steady", "peak_rss_mb")
            }
            | {"foreign_cpu_s": rnd[library]["diagnostics"].get("foreign_cpu_s_during_train")}
            for library in libraries
        }
        for rnd in rounds
    ]
    if len(libraries) == 2:
        ratios = [step_time(rnd["comlrl"]) / step_time(rnd["mrlm"]) for rnd in rounds]
        peaks = {library: max(rnd[library]["peak_rss_mb"] for rnd in rounds) for library in libraries}
        ratio = statistics.median(ratios)
        output["comparison"] = {
            "steps_per_s_ratio": round(ratio, 3),
            "steps_per_s_ratio_per_round": [round(x, 3) for x in ratios],
            "statistic": "per round: CoMLRL's median steady step time / MRLM's (= MRLM steps/s / "
            "CoMLRL steps/s); median over rounds",
            "peak_rss_mb": peaks,
            "peak_rss_ratio": round(peaks["mrlm"] / peaks["comlrl"], 3),
            "targets_met": {
                "steps_per_s_ratio >= 3": ratio >= 3.0,
                "mrlm peak_rss <= comlrl peak_rss": peaks["mrlm"] <= peaks["comlrl"],
            },
        }
    return output


def run_sizes(args: argparse.Namespace) -> dict[str, Any]:
    """Every size of ``--sizes``, one after the other; the CoMLRL side skipped if it cannot run."""
    workload = _workload()
    libraries = ["mrlm", "comlrl"] if args.library == "both" else [args.library]
    report: dict[str, Any] = {}
    missing = comlrl_missing(args) if "comlrl" in libraries else None
    if missing:
        if libraries == ["comlrl"]:
            raise SystemExit(missing)
        libraries = ["mrlm"]
        report["comlrl"] = {"skipped": missing}
    else:
        report["anchor"] = str(args.comlrl_anchor) if "comlrl" in libraries else None
        report["anchor_keys"] = list(ANCHOR_KEYS) if "comlrl" in libraries else []
    report["loadavg_before"] = workload.loadavg()
    report["sizes"] = {
        f"{hidden}x{layers}": compare(args, hidden, layers, libraries) for hidden, layers in args.sizes
    }
    report["loadavg_after"] = workload.loadavg()
    report["rounds"] = args.rounds
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.quiet:
        import warnings

        warnings.filterwarnings("ignore")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="magrpo_throughput_") as scratch:
        if args.work_dir is None:
            args.work_dir = scratch
        report = run_mrlm(args) if args.in_process else run_sizes(args)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(report, indent=2)
    if args.out_json:
        Path(args.out_json).write_text(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
