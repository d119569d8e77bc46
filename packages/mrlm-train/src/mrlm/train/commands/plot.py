"""``mrlm-train plot``: draw a run's training curves from its metrics.jsonl as a PNG."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro


@dataclass(frozen=True)
class PlotArgs:
    """Draw the curves of a run's metrics.jsonl (reward and loss by default) into a PNG file."""

    run_dir: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """The run's output directory (the one holding metrics.jsonl)."""
    keys: tuple[str, ...] = ("reward", "loss")
    """Metrics to draw, one panel each; those the run did not log are left out."""
    output: Path | None = None
    """PNG file to write; defaults to RUN_DIR/metrics.png."""
    smooth: int = 0
    """Also draw the trailing mean over this many steps, over faint raw values (0: raw values only)."""


def run_plot(args: PlotArgs) -> int:
    """Write the PNG and print its path; 1 with a message when there is nothing to draw."""
    from mrlm.train.loop.errors import OutputDirError
    from mrlm.train.loop.metrics import METRICS_FILE
    from mrlm.train.loop.output_dir import check_output_file, same_file
    from mrlm.train.loop.plots import plot_metrics

    metrics = args.run_dir / METRICS_FILE
    if not metrics.is_file():
        print(
            f"mrlm-train plot: {metrics} does not exist (is {args.run_dir} a run directory?)", file=sys.stderr
        )
        return 1
    output = args.output or args.run_dir / "metrics.png"
    try:  # before drawing: a directory or an unwritable place was a traceback from savefig
        if same_file(output, metrics):  # the PNG would replace the run's metrics, with no way back
            raise OutputDirError(
                f"--output {str(output)!r} is the run's metrics file {str(metrics)!r}: the PNG would "
                "replace it; give the PNG a path of its own"
            )
        check_output_file(output, "--output")
    except OutputDirError as error:
        print(f"mrlm-train plot: {error}", file=sys.stderr)
        return 1
    try:
        out = plot_metrics(metrics, output, keys=args.keys, smooth=args.smooth)
    except ValueError as error:
        print(f"mrlm-train plot: {error}", file=sys.stderr)
        return 1
    print(f"plot: {out}")
    return 0
