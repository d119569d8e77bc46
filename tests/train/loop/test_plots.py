"""Training curves: a valid PNG from metrics.jsonl; matplotlib stays out until plotting.

matplotlib is a dependency of mrlm-train's plotting: this test fails (it is not skipped) when it is
missing, so a broken install is noticed.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from mrlm.train.loop.metrics import read_metrics
from mrlm.train.loop.plots import _trailing_mean, plot_metrics

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _metrics(path: Path) -> Path:
    lines = [{"step": step, "time": 0.0, "loss": 2.0 / step, "reward": step / 10} for step in range(1, 11)]
    lines.append({"step": 10, "time": 1.0, "loss": 0.1, "reward": 1.0})  # a resumed step: last wins
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_plot_writes_a_png(tmp_path: Path) -> None:
    out = plot_metrics(_metrics(tmp_path / "metrics.jsonl"), tmp_path / "plots" / "curves.png")
    assert out == tmp_path / "plots" / "curves.png"
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert out.stat().st_size > 1000


def test_plot_without_any_key_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="none of"):
        plot_metrics(_metrics(tmp_path / "metrics.jsonl"), tmp_path / "x.png", keys=("kl",))


def test_a_last_line_torn_by_a_dead_run_is_left_out_and_any_other_bad_line_is_named(tmp_path: Path) -> None:
    path = _metrics(tmp_path / "metrics.jsonl")
    with path.open("a") as handle:
        handle.write('{"step": 11, "time": 2.0, "lo')  # the process died while writing this
    records = read_metrics(path)
    assert [record["step"] for record in records] == list(range(1, 11))
    assert records[-1]["loss"] == 0.1  # the resumed step 10 still wins
    assert plot_metrics(path, tmp_path / "torn.png").read_bytes()[:8] == PNG_MAGIC

    with path.open("a") as handle:
        handle.write("\n")  # a complete line now: not torn, just not a record
    with pytest.raises(ValueError, match=r"metrics\.jsonl:12: not a metrics record"):
        read_metrics(path)
    path.write_bytes(b'{"step": 1, "loss": 1.0}\n\xff\n')
    with pytest.raises(ValueError, match="not UTF-8 text"):
        read_metrics(path)


@pytest.mark.parametrize(
    "line",
    [
        '{"step": 1e400, "loss": 1.0}',
        '{"step": NaN, "loss": 1.0}',
        '{"step": ' + "9" * 400 + "}",
        "[" * 100_000,
    ],
    ids=["infinite-step", "nan-step", "step-beyond-a-float", "nested-too-deeply"],
)
def test_a_line_whose_step_is_no_finite_number_is_named(tmp_path: Path, line: str) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 1.0}\n' + line + "\n")
    with pytest.raises(ValueError, match=r"metrics\.jsonl:2: not a metrics record"):
        read_metrics(path)


def test_an_integer_no_float_holds_reads_as_infinity_as_1e400_does(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    rows = [
        '{"step": 1, "loss": 1.0}',
        '{"step": 2, "loss": ' + "9" * 400 + "}",
        '{"step": 3, "loss": -1e400}',
    ]
    path.write_text("".join(row + "\n" for row in [*rows, '{"step": 4, "loss": -' + "9" * 5000 + "}"]))
    assert [record["loss"] for record in read_metrics(path)] == [1.0, math.inf, -math.inf, -math.inf]
    assert plot_metrics(path, tmp_path / "curves.png").read_bytes()[:8] == PNG_MAGIC  # gaps, as for NaN


def test_trailing_mean_by_hand() -> None:
    # window 3: 1 -> 1; (1+2)/2; (1+2+6)/3; (2+6+3)/3
    assert _trailing_mean([1.0, 2.0, 6.0, 3.0], 3) == pytest.approx([1.0, 1.5, 3.0, 11 / 3])
    assert _trailing_mean([4.0, 8.0], 1) == [4.0, 8.0]


def test_trailing_mean_leaves_a_gap_only_at_a_non_finite_value() -> None:
    # A NaN once made every later mean NaN. Window 3, over the finite values in it:
    # 1 -> 1; (1+2)/2; NaN -> gap; (2+4)/2 (the NaN left out); (4+6)/2; (4+6+8)/3; inf -> gap; (8+3)/2
    values = [1.0, 2.0, math.nan, 4.0, 6.0, 8.0, math.inf, 3.0]
    means = _trailing_mean(values, 3)
    assert [math.isnan(mean) for mean in means] == [False, False, True, False, False, False, True, False]
    finite = [mean for mean in means if not math.isnan(mean)]
    assert finite == pytest.approx([1.0, 1.5, 3.0, 5.0, 6.0, 5.5], rel=1e-12)
    assert (
        math.isnan(_trailing_mean([-math.inf, 2.0], 2)[0]) and _trailing_mean([-math.inf, 2.0], 2)[1] == 2.0
    )


def test_smoothed_plot_writes_a_png_and_refuses_a_negative_window(tmp_path: Path) -> None:
    out = plot_metrics(_metrics(tmp_path / "metrics.jsonl"), tmp_path / "smooth.png", smooth=4)
    assert out.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="smooth must be >= 0"):
        plot_metrics(_metrics(tmp_path / "metrics.jsonl"), tmp_path / "x.png", smooth=-1)


@pytest.mark.slow
def test_importing_plots_does_not_import_matplotlib() -> None:
    code = "import sys, mrlm.train.loop.plots; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_missing_matplotlib_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_metrics(_metrics(tmp_path / "metrics.jsonl"), tmp_path / "x.png")
