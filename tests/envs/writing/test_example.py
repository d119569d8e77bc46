"""examples/writing_episode.py runs as a user runs it and shows the expected ordering of teams."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "writing_episode.py"


def test_the_example_plays_an_episode_and_ranks_the_teams(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "[summary]\nTL;DR:" in out and "[expansion]\nIn short:" in out and "[score]\nround 1: " in out
    assert re.search(r"^team reward \d\.\d{3} \(shared by both writers\)", out, flags=re.MULTILINE)
    rendered_score = re.search(r"\[score\]\nround 1: (\d\.\d{4})", out).group(1)  # type: ignore[union-attr]
    assert "coherence" in out and "originality" in out and "rouge1" in out
    table = out.split("team scores on post 3:")[1]
    teams = dict(re.findall(r"^  (\S[^\d]+?) +(\d\.\d+)$", table, flags=re.MULTILINE))
    assert list(teams) == ["scripted writers", "paste the post", "off-topic prose", "repeated word", "empty"]
    scores = [float(value) for value in teams.values()]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert teams["scripted writers"] == rendered_score  # the table's first row is the episode shown
