"""``mrlm-train collect``: trajectories in the format ``mrlm-train sft`` trains on, filtered by reward."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest

from mrlm.train.cli import main
from mrlm.train.rollout import load_jsonl
from tests.train.one_turn_env import OneTurnEnv

SMALL = ["--max-new-tokens", "4", "--no-progress-bar"]


class _EvenSeedsPay(OneTurnEnv):
    """Pays 1 for any reply to a task of even seed, 0 for an odd seed: known rewards for any model."""

    prompt = "Say anything."
    reset_info = {"system_prompt": "Reply."}  # noqa: RUF012 (read, never changed)

    def reward(self, action: str) -> float:
        return float(self.seed is not None and self.seed % 2 == 0)


@pytest.fixture
def even_env() -> Iterator[str]:
    gymnasium.register("mrlm-test/EvenSeedsPay-v0", entry_point=f"{__name__}:_EvenSeedsPay")
    yield "mrlm-test/EvenSeedsPay-v0"
    gymnasium.registry.pop("mrlm-test/EvenSeedsPay-v0")


class _ServerGoneAtSeed7(_EvenSeedsPay):
    """As :class:`_EvenSeedsPay`, but the task of seed 7 fails as a remote env does when its server
    went away."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed == 7:
            raise ConnectionError("the env server went away")
        return super().reset(seed=seed, options=options)


@pytest.fixture
def failing_env() -> Iterator[str]:
    gymnasium.register("mrlm-test/ServerGoneAtSeed7-v0", entry_point=f"{__name__}:_ServerGoneAtSeed7")
    yield "mrlm-test/ServerGoneAtSeed7-v0"
    gymnasium.registry.pop("mrlm-test/ServerGoneAtSeed7-v0")


@pytest.mark.parametrize("command", ["collect", "eval"])
def test_a_play_that_stops_early_keeps_the_tasks_played_in_full(
    saved_dir: Path, failing_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Seeds 4 and 5 are played (the first batch of two tasks), seed 7 fails in the second batch: the
    command fails in one line and the first batch's trajectories are written (collect filtered as
    asked); an eval writes no summary for part of its tasks."""
    out = tmp_path / "out.jsonl"
    argv = [command, "--model", str(saved_dir), "--env-id", failing_env, "--seeds", "4", "5", "6", "7", "8"]
    argv += ["--batch-size", "4", "-o", str(out), *SMALL]
    if command == "collect":
        argv += ["--group-size", "2", "--filter-reward", "1"]
    else:
        argv += ["--k", "2", "--temperature", "1"]
    assert main(argv) == 1
    error = capsys.readouterr().err.strip().splitlines()
    assert error[-1].startswith(f"mrlm-train {command}: EnvFailedError: ") and "seeds 6..7" in error[-1]
    seeds = [json.loads(line)["seed"] for line in out.read_text().splitlines()]
    if command == "collect":
        assert len(load_jsonl(out)) == 2  # the trajectory format sft reads
    if command == "collect":
        assert seeds == [4, 4]  # seed 5 pays nothing: filtered out
        assert (
            error[-2]
            == f"mrlm-train collect: stopped early; the 2 trajectories kept of the 2 tasks played in full are written to {out}"
        )
    else:
        assert seeds == [4, 4, 5, 5]
        assert error[-2].startswith(
            f"mrlm-train eval: stopped early; the 4 trajectories of the 2 tasks played in full are written to {out}"
        )
        assert not out.with_suffix(".summary.json").exists()


def test_collect_keeps_the_rewarded_trajectories_and_sft_trains_on_them(
    saved_dir: Path, even_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "data" / "kept.jsonl"
    argv = ["collect", "--model", str(saved_dir), "--env-id", even_env, "--seeds", "4", "5", "6", "7", "8"]
    assert main([*argv, "--group-size", "2", "--filter-reward", "1", "-o", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out
    assert "seeds: 4..8 (5 tasks x 2 episodes)" in printed
    assert f"10 trajectories, mean reward 0.600; kept 6 with total reward >= 1: {out}" in printed

    kept = load_jsonl(out)  # exactly the trajectory format
    assert [(t.seed, t.sample) for t in kept] == [(4, 0), (4, 1), (6, 0), (6, 1), (8, 0), (8, 1)]
    assert all(t.total_reward == 1.0 and sum(t.mask) > 0 for t in kept)
    assert len({t.group for t in kept}) == 3  # one group per task

    run = tmp_path / "sft"
    sft = ["sft", "--data", str(out), "--model.name-or-path", str(saved_dir), "--batch-size", "2"]
    sft += [
        "--micro-batch-size",
        "2",
        "--run.max-steps",
        "2",
        "--run.output-dir",
        str(run),
        "--run.no-progress-bar",
    ]
    assert main(sft) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2] and all(row["tokens"] > 0 for row in rows)
    assert (run / "final" / "config.json").is_file()


def test_collect_without_a_filter_keeps_everything_sampled_at_temperature_1(
    saved_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all.jsonl"
    assert (
        main(
            [
                "collect",
                "--model",
                str(saved_dir),
                "-n",
                "3",
                "-o",
                str(out),
                "--env-kwargs",
                '{"level": 1}',
                *SMALL,
            ]
        )
        == 0
    )
    # Training data: from seed 0 on, apart from the evaluation seeds (10**9 on).
    assert "seeds: 0..2 (3 tasks x 1 episode)" in capsys.readouterr().out
    trajectories = load_jsonl(out)
    assert [t.seed for t in trajectories] == [0, 1, 2]
    # Temperature 1: the recorded log-probs are those of sampled tokens, not all argmax choices.
    assert any(lp < 0 for t in trajectories for lp, m in zip(t.logprobs, t.mask, strict=True) if m)


def test_collect_writes_every_agents_trajectory(saved_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "team.jsonl"
    argv = [
        "collect",
        "--model",
        str(saved_dir),
        "--env-id",
        "mrlm/TeamSum-v0",
        "-n",
        "2",
        "--group-size",
        "2",
    ]
    assert main([*argv, "-o", str(out), *SMALL]) == 0
    trajectories = load_jsonl(out)
    assert len(trajectories) == 8
    assert [t.agent for t in trajectories[:4]] == ["first", "first", "second", "second"]
    assert all(t.messages[-1]["role"] == "assistant" for t in trajectories)


def test_output_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["collect", "--model", "tiny", "-n", "2"])
    assert exit_info.value.code == 2
    assert "--output" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--filter-reward", "nan"], "filter_reward must be a finite number, got nan"),
        (["--filter-reward", "inf"], "filter_reward must be a finite number, got inf"),
        (["--batch-size", "0"], "batch_size must be at least 1, got 0"),
        (["--step-workers", "-1"], "step_workers must be at least 1, got -1"),
        (["--max-turns", "0"], "max_turns must be at least 1, got 0"),
    ],
)
def test_settings_out_of_range_are_named_while_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["collect", "--model", "tiny", "-o", str(tmp_path / "out.jsonl"), *flags])
    assert exit_info.value.code == 2
    assert message in " ".join(capsys.readouterr().err.replace("\u2502", " ").split())


@pytest.mark.parametrize(
    ("flags", "prefix"),
    [
        (
            ["--model", "tiny", "--env-id", "mrlm/Nope-v0"],
            "mrlm-train collect: UnknownEnvError: unknown env id",
        ),
        (
            ["--model", "no/such/model/dir"],
            "mrlm-train collect: FileNotFoundError: model path 'no/such/model/dir'",
        ),
    ],
)
def test_a_broken_env_or_model_exits_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], prefix: str
) -> None:
    assert main(["collect", *flags, "-n", "1", "-o", str(tmp_path / "x.jsonl"), *SMALL]) == 1
    error = capsys.readouterr().err
    assert error.startswith(prefix) and error.count("\n") == 1, error
    assert not (tmp_path / "x.jsonl").exists()


def test_a_group_of_greedy_episodes_is_refused_while_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Greedy episodes of one task are all the same: a group of them would be copies, as eval's --k.
    argv = ["collect", "--model", "tiny", "-o", str(tmp_path / "d.jsonl"), "--temperature", "0"]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--group-size", "3"])
    assert exit_.value.code == 2
    assert "group_size=3 episodes per task need a temperature above 0" in " ".join(
        capsys.readouterr().err.replace("\u2502", " ").split()
    )
    assert not (tmp_path / "d.jsonl").exists()
