"""The quickstart: its task is checked by the env, and with tiny budgets every stage runs and reports.

The learning numbers of the full budget are stochastic and take minutes, so they are not tested here;
this checks the machinery: demonstrations the env scores as correct, the three evaluations, both
training runs, the table, the results file and the reward curve.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mrlm.envs
from mrlm.train.cli import main
from mrlm.train.generation.base import SamplingParams
from mrlm.train.policy import names_agent
from mrlm.train.quickstart import QuickstartConfig, demonstration, easy_problems
from mrlm.train.rollout import Policy, RolloutEngine
from tests.train.rollout.scripted_multi import DigitGenerator

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_problems_are_every_single_digit_sum_and_difference_in_a_seeded_order() -> None:
    problems = easy_problems(0)
    assert len(problems) == len({p["question"] for p in problems}) == 162
    assert problems == easy_problems(0) != easy_problems(1)
    assert {"question": "What is 3 - 8?", "answer": "#### -5"} in problems


def test_the_env_scores_every_demonstration_as_correct(tmp_path: Path) -> None:
    records = tmp_path / "problems.jsonl"
    records.write_text("".join(json.dumps(p) + "\n" for p in easy_problems(0)))
    env = mrlm.envs.make("mrlm/Math-v0", records=str(records))
    for seed in range(162):
        question, info = env.reset(seed=seed)
        assert "\\boxed{answer}" in info["system_prompt"]  # the env says how to answer
        reply = demonstration(question, str(env.unwrapped.task.answer))
        assert reply.endswith(f"\\boxed{{{env.unwrapped.task.answer}}}")
        _, reward, terminated, _, _ = env.step(reply)
        assert (reward, terminated) == (1.0, True), (question, reply)
    assert demonstration("What is 7 - 9?", "-2") == "7 - 9 = -2. \\boxed{-2}"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"demonstrations": 0}, "demonstrations must be in"),
        ({"grpo_steps": 0}, "^grpo_steps must be at least 1, got 0$"),
        ({"ppo_steps": 0}, "^ppo_steps must be at least 1, got 0$"),
        ({"sft_batch_size": -1}, "^sft_batch_size must be at least 1, got -1$"),
        ({"magrpo_steps": 0}, "^magrpo_steps must be at least 1, got 0$"),
        ({"team_demonstrations": 0}, "^team_demonstrations must be at least 1, got 0$"),
        ({"magrpo_temperature": 0.0}, "magrpo_temperature must be > 0"),
        ({"hidden_size": 0}, "hidden_size must be at least 1, got 0"),
        ({"hidden_size": 30}, "hidden_size \\(30\\) must be num_heads \\(4\\) times an even head width"),
        ({"num_layers": 0}, "num_layers must be at least 1, got 0"),
        ({"group_size": 1}, "group_size must be at least 2 with grpo, got 1"),
        ({"group_size": 0, "algorithm": "ppo"}, "group_size must be at least 1 with ppo, got 0"),
        ({"sft_learning_rate": float("nan")}, "sft_learning_rate must be a finite number > 0, got nan"),
        ({"critic_learning_rate": -1.0}, "critic_learning_rate must be a finite number > 0"),
        ({"temperature": -1.0}, "temperature must be >= 0"),
        ({"max_new_tokens": 0}, "max_new_tokens must be at least 1, got 0"),
        ({"multi_agent": True, "algorithm": "ppo"}, "the multi-agent quickstart runs MAGRPO"),
        (
            {"multi_agent": True, "group_size": 1},
            "^group_size must be at least 2 with multi_agent .*, got 1$",
        ),
        ({"multi_agent": True, "group_size": 17}, "289 joint actions per round.*group_size at most 16"),
    ],
)
def test_bad_budgets_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QuickstartConfig(**overrides)  # type: ignore[arg-type]


@pytest.mark.slow
def test_every_stage_runs_with_tiny_budgets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "quickstart"
    argv = ["quickstart", "--output-dir", str(out), "--demonstrations", "8", "--sft-steps", "3"]
    argv += ["--sft-batch-size", "4", "--grpo-steps", "2", "--prompts-per-step", "2", "--group-size", "2"]
    argv += ["--max-new-tokens", "8", "--no-progress-bar"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for row in ("untrained", "after SFT", "after SFT + GRPO"):
        assert row in printed
    assert str(out / "grpo_reward.png") in printed

    results = json.loads((out / "results.json").read_text())
    assert set(results["success"]) == {"untrained", "SFT", "GRPO"}
    assert all(0.0 <= rate <= 1.0 for rate in results["success"].values())
    assert results["seconds"]["total"] > 0
    assert (out / "grpo_reward.png").read_bytes()[:8] == PNG_MAGIC
    assert len((out / "demonstrations.jsonl").read_text().splitlines()) == 8
    for stage, steps in (("sft", 3), ("grpo", 2)):
        assert (out / stage / "final" / "config.json").is_file()
        rows = (out / stage / "metrics.jsonl").read_text().splitlines()
        assert [json.loads(row)["step"] for row in rows] == list(range(1, steps + 1))

    assert main(argv) == 0  # a second run replaces the first


@pytest.mark.slow
def test_the_ppo_stage_runs_with_tiny_budgets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "quickstart"
    argv = ["quickstart", "--algorithm", "ppo", "--output-dir", str(out), "--demonstrations", "8"]
    argv += ["--sft-steps", "3", "--sft-batch-size", "4", "--ppo-steps", "2", "--prompts-per-step", "2"]
    argv += ["--group-size", "2", "--max-new-tokens", "8", "--no-progress-bar"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "after SFT + PPO" in printed and "after SFT + GRPO" not in printed
    results = json.loads((out / "results.json").read_text())
    assert set(results["success"]) == {"untrained", "SFT", "PPO"}
    assert (out / "ppo_reward.png").read_bytes()[:8] == PNG_MAGIC
    assert (out / "ppo" / "final" / "policy" / "config.json").is_file()
    assert (out / "ppo" / "final" / "critic" / "config.json").is_file()
    rows = (out / "ppo" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(row)["step"] for row in rows] == [1, 2]
    assert "value/loss" in json.loads(rows[0])


@pytest.mark.slow
def test_the_multi_agent_quickstart_runs_with_tiny_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "team"
    argv = ["quickstart", "--multi-agent", "--output-dir", str(out), "--team-demonstrations", "4"]
    argv += [
        "--team-sft-steps",
        "3",
        "--sft-batch-size",
        "4",
        "--magrpo-steps",
        "2",
        "--prompts-per-step",
        "2",
    ]
    argv += ["--group-size", "2", "--max-new-tokens", "8", "--magrpo-temperature", "0.7", "--no-progress-bar"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for row in ("untrained", "after SFT", "after SFT + MAGRPO"):
        assert row in printed
    results = json.loads((out / "results.json").read_text())
    assert set(results["success"]) == {"untrained", "SFT", "MAGRPO"}
    assert (out / "magrpo_reward.png").read_bytes()[:8] == PNG_MAGIC
    assert len((out / "demonstrations.jsonl").read_text().splitlines()) == 8  # 4 tasks x 2 agents
    for agent in ("first", "second"):
        assert (out / "magrpo" / "final" / agent / "config.json").is_file()
    # Every model the team quickstart trains opens its conversations without the agent's name, and
    # says so, for mrlm-train eval to play it as the quickstart evaluated it.
    for model in (
        out / "sft" / "final",
        out / "magrpo" / "final" / "first",
        out / "magrpo" / "final" / "second",
    ):
        assert names_agent(str(model)) is False
    # MAGRPO samples at its own temperature, not at the single-agent quickstart's.
    magrpo_config = (out / "magrpo" / "config.yaml").read_text().splitlines()
    assert "temperature: 0.7" in magrpo_config


def test_every_team_demonstration_earns_the_team_reward(tmp_path: Path, tokenizer: Any) -> None:
    """The SFT data is right: both agents' demonstrations, replayed in the env, solve the task, and
    each chat opens with the system prompt a rollout gives that agent playing its own model."""
    from mrlm.train.quickstart_team import TEAM_ENV_ID, TEAM_ENV_KWARGS, write_team_demonstrations

    path = write_team_demonstrations(range(20), tmp_path / "demos.jsonl")
    chats = [json.loads(line)["messages"] for line in path.read_text().splitlines()]
    # The rollout the trained agents play (evaluate_team's, MAGRPO's): each agent its own model.
    policies = {
        agent: Policy(DigitGenerator(tokenizer), tokenizer, names_agent=False)
        for agent in ("first", "second")
    }
    with RolloutEngine(
        TEAM_ENV_ID,
        policies,
        sampling=SamplingParams(max_new_tokens=4),
        kind="parallel",
        env_kwargs=TEAM_ENV_KWARGS,
    ) as engine:
        opened = {(row.seed, row.agent): row.messages[0] for row in engine.collect(list(range(20)))}
    env = mrlm.envs.make(TEAM_ENV_ID, kind="parallel", **TEAM_ENV_KWARGS)
    for seed in range(20):
        observations, _ = env.reset(seed=seed)
        first, second = chats[2 * seed], chats[2 * seed + 1]
        assert (first[0], second[0]) == (opened[seed, "first"], opened[seed, "second"])
        assert "You are first." not in first[0]["content"]  # an agent's own model needs no name
        assert (first[1]["content"], second[1]["content"]) == (
            observations["first"]["text"],
            observations["second"]["text"],
        )
        _, rewards, _, _, _ = env.step({"first": first[2]["content"], "second": second[2]["content"]})
        assert rewards == {"first": 1.0, "second": 1.0}
