"""``mrlm-train plot``: a run's metrics.jsonl becomes a PNG; a missing run or metric is a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mrlm.train.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"step": step, "time": 0.0, "reward": step / 10, "loss": 1 / step} for step in range(1, 21)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return run


def test_plot_writes_a_png_next_to_the_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    assert main(["plot", str(run)]) == 0
    assert (run / "metrics.png").read_bytes()[:8] == PNG_MAGIC
    assert f"plot: {run / 'metrics.png'}" in capsys.readouterr().out


def test_plot_keys_and_output_are_chosen_by_flags(tmp_path: Path) -> None:
    out = tmp_path / "curves" / "reward.png"
    assert main(["plot", str(_run_dir(tmp_path)), "--keys", "reward", "--output", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_plot_errors_name_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", str(tmp_path / "nowhere")]) == 1
    assert "metrics.jsonl does not exist" in capsys.readouterr().err
    assert main(["plot", str(_run_dir(tmp_path)), "--keys", "kl"]) == 1
    assert "none of ['kl']" in capsys.readouterr().err


def test_plot_names_an_output_it_cannot_write_and_values_it_cannot_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    # A directory as --output was IsADirectoryError's traceback from savefig, after the drawing.
    assert main(["plot", str(run), "--output", str(tmp_path)]) == 1
    assert (
        capsys.readouterr().err == f"mrlm-train plot: --output {str(tmp_path)!r} is a directory, not a file\n"
    )
    assert main(["plot", str(run), "--keys"]) == 1
    assert capsys.readouterr().err == "mrlm-train plot: no metric to draw: name at least one with --keys\n"
    # A value that is no number ended in numpy's "inhomogeneous shape" message, naming nothing.
    with (run / "metrics.jsonl").open("a") as file:
        file.write(json.dumps({"step": 21, "reward": [1, 2]}) + "\n")
    assert main(["plot", str(run)]) == 1
    assert capsys.readouterr().err.endswith("metrics.jsonl: step 21: 'reward' is not a number ([1, 2])\n")
    assert not (run / "metrics.png").exists()


@pytest.mark.parametrize("name", ["same-path", "dot-dot", "symlink", "hard-link"])
def test_plot_refuses_an_output_that_is_the_metrics_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # The PNG replaced the run's metrics, status 0.
    run = _run_dir(tmp_path)
    metrics = run / "metrics.jsonl"
    before = metrics.read_bytes()
    (run / "sub").mkdir()
    output = {
        "same-path": metrics,
        "dot-dot": run / "sub" / ".." / "metrics.jsonl",
        "symlink": tmp_path / "link.png",
        "hard-link": tmp_path / "other-name.png",
    }[name]
    if name == "symlink":
        output.symlink_to(metrics)
    elif name == "hard-link":
        os.link(metrics, output)
    assert main(["plot", str(run), "--output", str(output)]) == 1
    error = capsys.readouterr().err
    assert error == (
        f"mrlm-train plot: --output {str(output)!r} is the run's metrics file {str(metrics)!r}: "
        "the PNG would replace it; give the PNG a path of its own\n"
    )
    assert metrics.read_bytes() == before
    assert not (run / "metrics.png").exists()


def test_plot_names_a_step_that_is_no_finite_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    with (run / "metrics.jsonl").open("a") as file:
        file.write('{"step": 1e400, "reward": 0.5}\n')  # OverflowError's traceback, from int()
    assert main(["plot", str(run)]) == 1
    assert capsys.readouterr().err.endswith("metrics.jsonl:21: not a metrics record (OverflowError)\n")


def test_plot_draws_a_value_no_float_holds_as_a_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    with (run / "metrics.jsonl").open("a") as file:
        file.write('{"step": 21, "reward": ' + "1" * 400 + "}\n")  # as 1e400 reads: infinity
    assert main(["plot", str(run)]) == 0
    assert (run / "metrics.png").read_bytes()[:8] == PNG_MAGIC
