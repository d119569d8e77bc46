"""fresh_dir: a script's directory emptied on every run, and never a directory it does not own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrlm.train.loop.errors import OutputDirError
from mrlm.train.loop.output_dir import FRESH_MARK, fresh_dir


def test_a_missing_or_empty_directory_is_made_and_marked(tmp_path: Path) -> None:
    for path in (tmp_path / "new" / "deeper", tmp_path / "empty"):
        if path.name == "empty":
            path.mkdir()
        assert fresh_dir(path, "demo.py") == path
        assert sorted(p.name for p in path.iterdir()) == [FRESH_MARK]


def test_its_own_directory_of_an_earlier_run_is_emptied(tmp_path: Path) -> None:
    path = fresh_dir(tmp_path / "run", "demo.py")
    (path / "checkpoints").mkdir()
    (path / "metrics.jsonl").write_text("{}\n")
    fresh_dir(path, "demo.py")
    assert sorted(p.name for p in path.iterdir()) == [FRESH_MARK]


@pytest.mark.parametrize("holder", ["a person", "another script"])
def test_a_directory_holding_files_it_did_not_write_is_refused_and_kept(tmp_path: Path, holder: str) -> None:
    path = tmp_path / "thesis"
    if holder == "another script":
        fresh_dir(path, "other.py")
    else:
        path.mkdir()
    (path / "chapter1.tex").write_text("years of work")
    with pytest.raises(OutputDirError, match=r"holds files that no earlier run of demo\.py wrote"):
        fresh_dir(path, "demo.py")
    assert (path / "chapter1.tex").read_text() == "years of work"


def test_a_file_or_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    for name in ("file", "link"):
        with pytest.raises(OutputDirError, match=r"is not a directory demo\.py made"):
            fresh_dir(tmp_path / name, "demo.py")
    assert (tmp_path / "file").read_text() == "x" and (tmp_path / "target" / "kept").is_file()
