"""Training curves from ``metrics.jsonl`` as a PNG.

matplotlib is imported only when plotting (with the non-interactive Agg backend, so it works on
machines without a display), keeping it out of every training process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mrlm.train.loop.metrics import read_metrics


def plot_metrics(metrics_jsonl: Path, out_png: Path, keys: Sequence[str] = ("reward", "loss")) -> Path:
    """Draw each of ``keys`` against the step, one panel per key, into ``out_png``; return ``out_png``.

    Keys absent from every record are left out; a step logged twice (a resumed run) is drawn with
    its last record. Raises ValueError when none of ``keys`` was logged, and ImportError when
    matplotlib is not installed.
    """
    records = read_metrics(Path(metrics_jsonl))
    present = [key for key in keys if any(key in record for record in records)]
    if not present:
        raise ValueError(f"none of {list(keys)} is in {metrics_jsonl}")
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(
        len(present), 1, sharex=True, figsize=(7, 2.6 * len(present)), squeeze=False
    )
    for axis, key in zip(axes[:, 0], present, strict=True):
        points = [(record["step"], record[key]) for record in records if key in record]
        axis.plot([step for step, _ in points], [value for _, value in points], linewidth=1.2)
        axis.set_ylabel(key)
        axis.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    figure.tight_layout()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png", dpi=100)
    pyplot.close(figure)
    return out


def _pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, or an ImportError saying what to install."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError("plotting metrics needs matplotlib: pip install matplotlib") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot
