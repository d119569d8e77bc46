"""Scores of hand-made trajectories: the success rule, the team rule, pass@k per task, the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrlm.train.evaluation.report import (
    ALL,
    TEAM,
    format_table,
    save_episodes,
    summarise,
    summary_dict,
)
from mrlm.train.rollout import Trajectory


def _row(
    env: str, seed: int, episode: int, reward: float, agent: str | None = None, sample: int = 0
) -> Trajectory:
    return Trajectory(
        env_id=env,
        seed=seed,
        group=0,
        messages=[{"role": "assistant", "content": "x"}],
        token_ids=[1, 2],
        mask=[0, 1],
        logprobs=[0.0, -0.5],
        turn_rewards=[reward],
        agent=agent,
        episode=episode,
        sample=sample,
    )


def test_single_agent_scores_by_task() -> None:
    # Two tasks, three samples each: seed 1 earns 1, 0, 0.5; seed 2 earns 0, 0, 0.
    rewards = {1: [1.0, 0.0, 0.5], 2: [0.0, 0.0, 0.0]}
    rows = [
        _row("math", seed, 3 * i + j, reward, sample=j)
        for i, (seed, values) in enumerate(rewards.items())
        for j, reward in enumerate(values)
    ]
    report = summarise(rows, ks=(1, 2, 3))
    # Successes (reward > 0): 2 of 3 for seed 1, 0 of 3 for seed 2.
    # pass@1 = (2/3 + 0) / 2; pass@2 = (1 - C(1, 2)/C(3, 2) + 0) / 2 = 1/2; pass@3 = 1/2.
    score = report.envs["math"]
    assert (score.tasks, score.episodes) == (2, 6)
    assert score.mean_reward == pytest.approx(1.5 / 6, rel=1e-12)
    assert score.success_rate == pytest.approx(2 / 6, rel=1e-12)
    assert score.pass_at == pytest.approx({1: 1 / 3, 2: 0.5, 3: 0.5}, rel=1e-12)
    assert report.overall == score and report.agents == {}

    # A higher threshold: only the reward of 1 passes 0.5 -> one success in seed 1.
    strict = summarise(rows, threshold=0.5, ks=(1, 2))
    assert strict.overall.success_rate == pytest.approx(1 / 6, rel=1e-12)
    assert strict.overall.pass_at[2] == pytest.approx((1 - 1 / 3) / 2, rel=1e-12)


def test_a_k_beyond_the_samples_is_left_out() -> None:
    report = summarise([_row("math", 1, 0, 1.0), _row("math", 1, 1, 0.0, sample=1)], ks=(1, 2, 4))
    assert sorted(report.overall.pass_at) == [1, 2]


def test_multi_agent_rows_per_agent_and_the_team_needs_every_agent() -> None:
    # Episode 0: both agents paid 1 (a team success); episode 1: first 1, second 0 (a failure).
    rows = [
        _row("team_env", 5, 0, 1.0, "first"),
        _row("team_env", 5, 0, 1.0, "second"),
        _row("team_env", 6, 1, 1.0, "first"),
        _row("team_env", 6, 1, 0.0, "second"),
    ]
    report = summarise(rows)
    team = report.envs["team_env"]
    assert (team.tasks, team.episodes) == (2, 2)
    assert team.success_rate == pytest.approx(0.5, rel=1e-12)
    assert team.mean_reward == pytest.approx((1.0 + 0.5) / 2, rel=1e-12)  # mean over each episode's agents
    assert report.agents["team_env"]["first"].success_rate == pytest.approx(1.0, rel=1e-12)
    assert report.agents["team_env"]["second"].success_rate == pytest.approx(0.5, rel=1e-12)

    table = format_table(report).splitlines()
    assert table[0].split()[:2] == ["env", "agent"]
    assert [line.split()[1] for line in table[1:]] == [TEAM, "first", "second"]

    summary = summary_dict(report)
    assert set(summary["per_env"]["team_env"]["per_agent"]) == {"first", "second"}
    assert summary["per_env"]["team_env"]["success_rate"] == pytest.approx(0.5, rel=1e-12)


def test_a_mixture_has_a_row_per_env_and_an_overall_row() -> None:
    rows = [_row("a", 1, 0, 1.0), _row("a", 2, 1, 0.0), _row("b", 1, 0, 1.0)]
    report = summarise(rows)
    assert list(report.envs) == ["a", "b"]
    assert report.envs["a"].success_rate == pytest.approx(0.5, rel=1e-12)
    # Episode ids repeat across envs (each env its own engine); they are kept apart.
    assert report.overall.episodes == 3
    assert report.overall.success_rate == pytest.approx(2 / 3, rel=1e-12)
    lines = format_table(report).splitlines()
    assert lines[0].split() == ["env", "tasks", "episodes", "reward", "success", "pass@1"]
    assert [line.split()[0] for line in lines[1:]] == ["a", "b", ALL]
    assert lines[-1].split()[1:] == ["3", "3", "0.667", "66.7%", "66.7%"]


def test_episodes_file_is_trajectory_jsonl_with_reward_and_success(tmp_path: Path) -> None:
    rows = [_row("math", 1, 0, 1.0), _row("math", 2, 1, 0.0)]
    path = save_episodes(tmp_path / "deep" / "episodes.jsonl", rows, threshold=0.0)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["seed"], line["total_reward"], line["success"]) for line in lines] == [
        (1, 1.0, True),
        (2, 0.0, False),
    ]
    assert lines[0]["token_ids"] == [1, 2] and lines[0]["turn_rewards"] == [1.0]
