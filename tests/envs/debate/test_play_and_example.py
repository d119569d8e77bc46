"""``mrlm-envs play`` and ``list`` with the debate, and the example script run as a user would."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mrlm.envs.cli import main
from mrlm.envs.play import Terminal, play

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "debate_episode.py"


def test_a_person_plays_con_against_a_random_pro() -> None:
    # The seat is asked for (a wrong name first), then two replies of several lines, each ended by ".".
    typed = "nobody\ncon\nMy first reply.\nIt has two lines.\n.\nClosing words.\n.\n"
    out = io.StringIO()
    terminal = Terminal(stdin=io.StringIO(typed), stdout=out)
    totals = play("mrlm/Debate-v0", seed=0, env_kwargs={"rounds": 2}, terminal=terminal)
    text = out.getvalue()
    assert "Which agent do you play? [pro/con]" in text and "Please type one of: pro, con" in text
    assert text.count("Your reply as con") == 2
    assert text.count("[pro] (random)") == 2
    assert "[to con] Motion: " in text and "on the CON side" in text
    assert "[round 1, opening] con (CON):\nMy first reply.\nIt has two lines." in text
    assert "Episode over. Total rewards:" in text
    assert set(totals) == {"pro", "con"} and totals["pro"] == -totals["con"]  # zero-sum


def test_quitting_a_debate_stops_cleanly() -> None:
    out = io.StringIO()
    totals = play("mrlm/Debate-v0", seed=1, agent="pro", terminal=Terminal(io.StringIO("/quit\n"), out))
    assert totals == {} and "Stopped." in out.getvalue()


def test_the_debate_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    main(["list", "--json"])
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["mrlm/Debate-v0"]["kinds"] == ["aec", "parallel"]


def test_the_example_runs_a_full_episode() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "[round 4, closing] con (CON):" in result.stdout
    assert "winner: pro" in result.stdout
    assert "rewards: {'pro': 1.0, 'con': -1.0}" in result.stdout
