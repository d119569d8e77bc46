"""Training curves from ``metrics.jsonl`` as a PNG.

matplotlib is imported only when plotting (with the non-interactive Agg backend, so it works on
machines without a display), keeping it out of every training process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mrlm.train.loop.metrics import read_metrics


def plot_metrics(
    metrics_jsonl: Path, out_png: Path, keys: Sequence[str] = ("reward", "loss"), *, smooth: int = 0
) -> Path:
    """Draw each of ``keys`` against the step, one panel per key, into ``out_png``; return ``out_png``.

    Keys absent from every record are left out; a step logged twice (a resumed run) is drawn with
    its last record; a value that is NaN or infinite leaves a gap in its curve. With ``smooth > 1``
    the raw values are drawn faintly and their trailing mean over ``smooth`` records on top (noisy RL
    metrics show their trend); a non-finite value is a gap there too, left out of its neighbours'
    means. Raises ValueError when none of ``keys`` was logged, and ImportError when matplotlib is
    not installed.
    """
    if smooth < 0:
        raise ValueError(f"smooth must be >= 0, got {smooth}")
    if not keys:
        raise ValueError("no metric to draw: name at least one with --keys")
    records = read_metrics(Path(metrics_jsonl))
    present = [key for key in keys if any(key in record for record in records)]
    if not present:
        raise ValueError(f"none of {list(keys)} is in {metrics_jsonl}")
    for record in records:  # a value matplotlib cannot place would end in numpy's own message
        for key in present:
            value = record.get(key, 0.0)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(
                    f"{metrics_jsonl}: step {record['step']}: {key!r} is not a number ({value!r:.60})"
                )
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(
        len(present), 1, sharex=True, figsize=(7, 2.6 * len(present)), squeeze=False
    )
    for axis, key in zip(axes[:, 0], present, strict=True):
        points = [(record["step"], record[key]) for record in records if key in record]
        steps, values = [step for step, _ in points], [value for _, value in points]
        if smooth > 1:
            axis.plot(steps, values, linewidth=0.8, alpha=0.35, color="C0")
            axis.plot(
                steps, _trailing_mean(values, smooth), linewidth=1.6, color="C0", label=f"mean of {smooth}"
            )
            axis.legend(loc="best", fontsize="small")
        else:
            axis.plot(steps, values, linewidth=1.2)
        axis.set_ylabel(key)
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    figure.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png", dpi=100)
    pyplot.close(figure)
    return out


def _trailing_mean(values: Sequence[float], window: int) -> list[float]:
    """Mean of each value and up to ``window - 1`` before it, over the finite ones among them.

    A NaN or infinite value is NaN in the result (a gap at its own step) and is left out of its
    neighbours' means, so one bad step does not erase the rest of the curve.
    """
    means = []
    for i, value in enumerate(values):
        if not math.isfinite(value):
            means.append(math.nan)
            continue
        finite = [v for v in values[max(0, i - window + 1) : i + 1] if math.isfinite(v)]
        means.append(sum(finite) / len(finite))  # ``value`` itself is among them
    return means


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or an ImportError saying what to install."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError("plotting metrics needs matplotlib: pip install matplotlib") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot
