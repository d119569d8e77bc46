"""``mrlm-train eval``: score a model on env tasks: mean reward, success rate and pass@k."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from mrlm.train.evaluation.config import PlayConfig, counted, describe_plan, describe_seeds
from mrlm.train.evaluation.passk import reported_ks
from mrlm.train.evaluation.play import play, tasks_in
from mrlm.train.evaluation.report import format_table, save_episodes, summarise, summary_dict
from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import check_output_file, same_file
from mrlm.train.rollout import Trajectory


@dataclass
class EvalArgs(PlayConfig):
    """Evaluate a model (or one model per agent) on env tasks: mean reward, success rate and pass@k,
    per env and per agent, printed as a table and written as a JSON summary, with the episodes as
    JSONL. Greedy by default; --k K --temperature T samples K replies per task. See docs/evaluation.md."""

    k: int = 1
    """Samples per task (needs temperature > 0 when above 1); the table reports pass@1, pass@2,
    pass@4, ... and pass@k."""
    pass_at: tuple[int, ...] = ()
    """The k values of pass@k to report instead, each at most k."""
    success_threshold: float = 0.0
    """An episode succeeds when its total reward is above this."""
    output: Annotated[str | None, tyro.conf.arg(aliases=("-o",))] = None
    """JSONL file of the episodes: the trajectory format plus total_reward and success; None writes none."""
    summary: str | None = None
    """JSON file of the scores and the settings; default: beside output, as NAME.summary.json."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.pass_at = tuple(self.pass_at)
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.k > 1 and self.temperature == 0:
            raise ValueError(
                f"k={self.k} samples per task need a temperature above 0: greedy replies are all the same"
            )
        if not math.isfinite(self.success_threshold):
            raise ValueError(f"success_threshold must be a finite number, got {self.success_threshold}")
        if any(not 1 <= k <= self.k for k in self.pass_at):
            raise ValueError(f"pass_at values must be in [1, k={self.k}], got {list(self.pass_at)}")

    def summary_path(self) -> Path | None:
        """Where the summary goes: ``summary``, else ``output`` with ``.summary.json`` for its suffix."""
        if self.summary:
            return Path(self.summary)
        if self.output:
            return Path(self.output).with_suffix(".summary.json")
        return None


def run_eval(args: EvalArgs) -> int:
    """Print the seeds, play, print the table, write the episodes and the summary; return 0.

    Raises:
        OutputDirError: before playing, an output path that cannot be written, or ``output`` and
            the summary naming the same file.
    """
    # Before playing, which may take hours: a path that cannot be written would lose every episode.
    if args.output:
        check_output_file(args.output, "output")
    summary = args.summary_path()
    if summary is not None:
        check_output_file(summary, "summary" if args.summary else "summary (written beside output)")
        if args.output and same_file(args.output, summary):
            raise OutputDirError(
                f"output {args.output!r} and summary {str(summary)!r} are the same file: the summary "
                "would replace the episodes; give each a path of its own"
            )
    seeds = args.task_seeds()
    envs = args.envs()
    print(describe_plan(seeds, args.k, "sample", len(envs)), flush=True)
    so_far: list[Trajectory] = []
    try:
        played = play(args, args.k, into=so_far)
    except BaseException:
        # An env server gone or Ctrl-C after hours of sampling: the tasks played in full are kept.
        if so_far and args.output:
            written = save_episodes(args.output, so_far, args.success_threshold)
            print(
                f"mrlm-train eval: stopped early; the {counted(len(so_far), 'trajectory', 'trajectories')} of the "
                f"{counted(tasks_in(so_far), 'task')} played in full are written to {written} "
                "(no summary: its scores would stand for part of the tasks)",
                file=sys.stderr,
            )
        raise
    report = summarise(
        played.trajectories, threshold=args.success_threshold, ks=args.pass_at or reported_ks(args.k)
    )
    print(format_table(report))
    if args.output:
        print(f"episodes: {save_episodes(args.output, played.trajectories, args.success_threshold)}")
    if summary is not None:
        summary.parent.mkdir(parents=True, exist_ok=True)
        settings: dict[str, Any] = {
            "model": args.model,
            "agent_models": args.agent_models,
            "envs": [{"name": env.label, "id": env.env_id, "kwargs": env.kwargs} for env in played.envs],
            "seeds": describe_seeds(seeds),
            "tasks": len(seeds),
            "samples_per_task": args.k,
            "temperature": args.temperature,
            "top_p": args.top_p,
            "max_new_tokens": args.max_new_tokens,
            "max_turns": args.max_turns,
            "sampling_seed": args.sampling_seed,
            "success": f"total reward > {args.success_threshold:g}",
        }
        summary.write_text(
            json.dumps({**settings, **summary_dict(report)}, indent=2) + "\n", encoding="utf-8"
        )
        print(f"summary: {summary}")
    return 0
