"""Scoring played episodes: mean reward, success rate and pass@k, overall, per env and per agent.

**Success.** An episode succeeds when its total reward (the sum of its turn rewards) is above
``threshold``, 0 by default: the rule of the quickstart and of the trainers' ``success/<env>``
metric. The envs' infos do not share a success flag (Math-v0, ToolUse-v0 and TeamSum-v0 say
``correct``, Code-v0 counts ``passed`` tests, ClassCompletion-v0 says ``all_passed``, Debate-v0 names
a ``winner``), so the reward is the one rule that holds for every env. With a shaped reward that
pays something for a wrong answer (Math-v0's ``format_reward``, say), raise the threshold above it.

**Multi-agent envs.** Each agent's side of an episode is scored on its own rewards (a row per
agent); the joint episode succeeds when every agent's side does (the multi-agent quickstart's team
success) and its reward is the mean of the agents' (a ``team`` row).

**pass@k** is over tasks (an env and a seed): with ``n`` samples of a task, ``c`` of them
successes, :func:`~mrlm.train.evaluation.passk.pass_at_k` per task, then the mean over tasks. With
the same number of samples for every task, pass@1 equals the success rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mrlm.train.evaluation.passk import mean_pass_at_k
from mrlm.train.rollout import Trajectory, save_jsonl

#: The row of the joint episodes of a multi-agent env.
TEAM = "team"
#: The row of every env's episodes together, after the envs' rows of a mixture.
ALL = "all"


@dataclass(frozen=True)
class Outcome:
    """One scored episode (or one agent's side of one): its task, reward and success."""

    env: str
    seed: int | None
    reward: float
    success: bool


@dataclass(frozen=True)
class Score:
    """The scores of a set of episodes."""

    tasks: int
    """Distinct tasks (env and seed)."""
    episodes: int
    mean_reward: float
    success_rate: float
    """Share of the episodes that succeeded."""
    pass_at: dict[int, float]
    """pass@k for each k reported (those at most every task's number of samples)."""

    def as_dict(self) -> dict[str, float]:
        """The scores as flat JSON keys: tasks, episodes, mean_reward, success_rate, pass@1, ..."""
        return {
            "tasks": self.tasks,
            "episodes": self.episodes,
            "mean_reward": self.mean_reward,
            "success_rate": self.success_rate,
            **{f"pass@{k}": value for k, value in self.pass_at.items()},
        }


@dataclass(frozen=True)
class Report:
    """Scores overall, per env (by name) and per agent of each multi-agent env."""

    overall: Score
    """Every episode of every env (joint episodes in multi-agent envs)."""
    envs: dict[str, Score]
    """Each env's episodes (joint episodes in a multi-agent env)."""
    agents: dict[str, dict[str, Score]]
    """Each agent's side of the episodes, by env and agent; multi-agent envs only."""


def succeeded(trajectory: Trajectory, threshold: float = 0.0) -> bool:
    """The success rule: a total reward above ``threshold``."""
    return trajectory.total_reward > threshold


def score(outcomes: Sequence[Outcome], ks: Iterable[int]) -> Score:
    """Mean reward, success rate and pass@k of ``outcomes`` (a task is an env and a seed).

    A ``k`` larger than some task's number of samples is left out (pass@k needs ``k`` samples).

    Raises:
        ValueError: no outcomes.
    """
    if not outcomes:
        raise ValueError("nothing to score: no episodes")
    tasks: dict[tuple[str, int | None], list[int]] = {}
    for outcome in outcomes:
        counts = tasks.setdefault((outcome.env, outcome.seed), [0, 0])
        counts[0] += 1
        counts[1] += outcome.success
    fewest = min(n for n, _ in tasks.values())
    return Score(
        tasks=len(tasks),
        episodes=len(outcomes),
        mean_reward=sum(outcome.reward for outcome in outcomes) / len(outcomes),
        success_rate=sum(outcome.success for outcome in outcomes) / len(outcomes),
        pass_at={
            k: mean_pass_at_k([(n, c) for n, c in tasks.values()], k) for k in sorted(set(ks)) if k <= fewest
        },
    )


def episode_outcomes(trajectories: Sequence[Trajectory], threshold: float = 0.0) -> list[Outcome]:
    """One outcome per (joint) episode, in order of first appearance: in a multi-agent env the mean
    of its agents' rewards, and success when every agent's side succeeded."""
    episodes: dict[tuple[str, int], list[Trajectory]] = {}
    for index, trajectory in enumerate(trajectories):
        # Episode ids are unique within one env's engine; a trajectory without one is its own episode.
        key = (trajectory.env_id, trajectory.episode if trajectory.episode is not None else -1 - index)
        episodes.setdefault(key, []).append(trajectory)
    return [
        Outcome(
            rows[0].env_id,
            rows[0].seed,
            sum(row.total_reward for row in rows) / len(rows),
            all(succeeded(row, threshold) for row in rows),
        )
        for rows in episodes.values()
    ]


def summarise(
    trajectories: Sequence[Trajectory], *, threshold: float = 0.0, ks: Iterable[int] = (1,)
) -> Report:
    """The :class:`Report` of ``trajectories`` (see the module docstring for the rules)."""
    ks = tuple(ks)
    episodes = episode_outcomes(trajectories, threshold)
    envs = {
        env: score([outcome for outcome in episodes if outcome.env == env], ks)
        for env in dict.fromkeys(outcome.env for outcome in episodes)
    }
    agents: dict[str, dict[str, Score]] = {}
    for env in envs:
        sides: dict[str, list[Outcome]] = {}
        for row in trajectories:
            if row.env_id == env and row.agent is not None:
                outcome = Outcome(row.env_id, row.seed, row.total_reward, succeeded(row, threshold))
                sides.setdefault(row.agent, []).append(outcome)
        if sides:
            agents[env] = {agent: score(outcomes, ks) for agent, outcomes in sides.items()}
    return Report(score(episodes, ks), envs, agents)


def summary_dict(report: Report) -> dict[str, Any]:
    """The report as JSON: ``overall``, and ``per_env`` (each env's scores, with ``per_agent`` in a
    multi-agent env)."""
    per_env: dict[str, Any] = {}
    for env, env_score in report.envs.items():
        per_env[env] = env_score.as_dict()
        if env in report.agents:
            per_env[env]["per_agent"] = {
                agent: agent_score.as_dict() for agent, agent_score in report.agents[env].items()
            }
    return {"overall": report.overall.as_dict(), "per_env": per_env}


def format_table(report: Report) -> str:
    """The report as a table: a row per env (``team`` and a row per agent in a multi-agent env), then
    an ``all`` row when there are several envs. Rates in percent."""
    ks = sorted({k for env_score in report.envs.values() for k in env_score.pass_at})
    header = ["env", "agent", "tasks", "episodes", "reward", "success", *[f"pass@{k}" for k in ks]]
    rows: list[list[str]] = []

    def add(env: str, agent: str, entry: Score) -> None:
        rates = [f"{entry.pass_at[k]:.1%}" if k in entry.pass_at else "-" for k in ks]
        numbers = [
            str(entry.tasks),
            str(entry.episodes),
            f"{entry.mean_reward:.3f}",
            f"{entry.success_rate:.1%}",
        ]
        rows.append([env, agent, *numbers, *rates])

    for env, env_score in report.envs.items():
        add(env, TEAM if env in report.agents else "", env_score)
        for agent, agent_score in report.agents.get(env, {}).items():
            add(env, agent, agent_score)
    if len(report.envs) > 1:
        add(ALL, "", report.overall)
    if not report.agents:  # no multi-agent env: no agent column
        header.pop(1)
        rows = [row[:1] + row[2:] for row in rows]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    text_columns = 2 if report.agents else 1
    lines = [
        "  ".join(
            cell.ljust(width) if i < text_columns else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in [header, *rows]
    ]
    return "\n".join(lines)


def save_episodes(path: str | Path, trajectories: Iterable[Trajectory], threshold: float = 0.0) -> Path:
    """Write the trajectories as JSONL in the trajectory format, each line with two more keys:
    ``total_reward`` and ``success`` (by ``threshold``). ``mrlm-train sft --data`` reads it too."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_jsonl(
        out,
        trajectories,
        extra=lambda row: {"total_reward": row.total_reward, "success": succeeded(row, threshold)},
    )
