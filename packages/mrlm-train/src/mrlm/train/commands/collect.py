"""``mrlm-train collect``: play a model on env tasks and write its trajectories for ``mrlm-train sft``."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from mrlm.train.evaluation.config import PlayConfig, counted, describe_plan
from mrlm.train.evaluation.play import play, tasks_in
from mrlm.train.loop.output_dir import check_output_file
from mrlm.train.rollout import Trajectory, save_jsonl


@dataclass
class CollectArgs(PlayConfig):
    """Play a model (or one model per agent) on env tasks and write the trajectories as JSONL, the
    format `mrlm-train sft --data` reads: every episode, or with --filter-reward only those whose total
    reward reaches it (rejection sampling). Sampled at temperature 1 by default. See docs/evaluation.md."""

    output: Annotated[str, tyro.conf.arg(aliases=("-o",))] = tyro.MISSING
    """JSONL file to write, one trajectory per line (each agent's side of a multi-agent episode is one)."""
    seed_start: int = 0
    """First task seed. Collected episodes are training data: the default (0) keeps them apart from
    the evaluation seeds (10**9 on)."""
    temperature: float = 1.0
    """Sampling temperature; 0 is greedy decoding."""
    group_size: int = 1
    """Episodes per task: the trajectories of one task (and agent) share a group id."""
    filter_reward: float | None = None
    """Keep only the trajectories whose total reward is at least this; None keeps them all."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.output, str) or not self.output:
            raise ValueError("output must name the JSONL file to write (-o FILE)")
        if self.group_size < 1:
            raise ValueError(f"group_size must be at least 1, got {self.group_size}")
        if self.group_size > 1 and self.temperature == 0:
            raise ValueError(
                f"group_size={self.group_size} episodes per task need a temperature above 0: greedy "
                "episodes of one task are all the same"
            )
        if self.filter_reward is not None and not math.isfinite(self.filter_reward):
            raise ValueError(f"filter_reward must be a finite number, got {self.filter_reward}")


def run_collect(args: CollectArgs) -> int:
    """Print the seeds, play, write the kept trajectories, print how many; return 0."""
    check_output_file(args.output, "output")  # before playing: a path that cannot be written loses it all
    seeds = args.task_seeds()
    envs = args.envs()
    print(describe_plan(seeds, args.group_size, "episode", len(envs)), flush=True)
    out = Path(args.output)
    so_far: list[Trajectory] = []
    try:
        rows = play(args, args.group_size, into=so_far).trajectories
    except BaseException:
        # An env server gone or Ctrl-C after hours of sampling: the tasks played in full are kept.
        if so_far:
            written = _write(out, _kept(so_far, args.filter_reward))
            print(
                f"mrlm-train collect: stopped early; the {counted(written, 'trajectory', 'trajectories')} "
                f"kept of the {counted(tasks_in(so_far), 'task')} played in full are written to {out}",
                file=sys.stderr,
            )
        raise
    kept = _kept(rows, args.filter_reward)
    _write(out, kept)
    mean = sum(t.total_reward for t in rows) / len(rows) if rows else 0.0
    rule = "" if args.filter_reward is None else f" with total reward >= {args.filter_reward:g}"
    print(
        f"{counted(len(rows), 'trajectory', 'trajectories')}, mean reward {mean:.3f}; kept {len(kept)}{rule}: {out}"
    )
    return 0


def _kept(rows: Sequence[Trajectory], filter_reward: float | None) -> list[Trajectory]:
    return list(rows) if filter_reward is None else [t for t in rows if t.total_reward >= filter_reward]


def _write(out: Path, rows: list[Trajectory]) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    save_jsonl(out, rows)
    return len(rows)
