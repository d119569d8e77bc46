"""IPPO: each agent's own policy and critic, trained through the command line and on scripted games
whose rewards are known, so that its returns and its independence can be checked by hand."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForTokenClassification

from mrlm.envs import DatasetTaskEnv, Outcome
from mrlm.train.algorithms import ALGORITHMS, ippo
from mrlm.train.algorithms.ippo import IPPOConfig
from mrlm.train.algorithms.multi_agent import MultiAgentSetupError, collect_rows
from mrlm.train.algorithms.onpolicy import TaskSeeds
from mrlm.train.cli import explains_itself, main
from mrlm.train.generation import SamplingParams
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig, TrainingSession
from mrlm.train.policy import names_agent
from mrlm.train.rollout import RolloutEngine
from mrlm.train.rollout.batch import collate
from mrlm.train.tiny import build_tiny_model
from mrlm.train.value import VALUE_HEAD_FILE, PolicyWithValueHead
from tests.train.rollout.scripted_multi import Coordinate, DigitGenerator, Relay


def _small(output_dir: Path, **changes: Any) -> IPPOConfig:
    settings: dict[str, Any] = {
        "prompts_per_step": 2,
        "max_new_tokens": 4,
        "num_iterations": 2,
        "mini_batch_size": 2,
        "run": RunConfig(output_dir=str(output_dir), max_steps=2, progress_bar=False),
        "optim": OptimConfig(learning_rate=1e-3),
    }
    settings.update(changes)
    return IPPOConfig(**settings)


def _metrics(run: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_each_agent_trains_its_own_policy_and_critic_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["ippo", "--env-id", "mrlm/TeamSum-v0", "--critic", "model", "--prompts-per-step", "2"]
    argv += ["--max-new-tokens", "6", "--run.output-dir", str(out), "--run.max-steps", "2"]
    argv += ["--run.no-progress-bar"]
    assert main(argv) == 0
    rows = _metrics(out)
    assert [row["step"] for row in rows] == [1, 2]
    for key in (
        *ippo.METRICS,
        "policy/first/loss",
        "value/second/loss",
        "agent/first/reward",
        "grad_norm/critic_second",
        "lr/critic_first",
    ):
        key = key.replace("<agent>", "second")
        assert key in rows[0], key
    assert rows[0]["lr/critic_first"] == pytest.approx(1e-4)  # the critics' own rate
    for agent in ("first", "second"):
        AutoModelForCausalLM.from_pretrained(out / "final" / agent)
        critic = AutoModelForTokenClassification.from_pretrained(out / "final" / f"critic_{agent}")
        # The policy is the agent's own, trained without its name; the critic records nothing.
        assert not names_agent(str(out / "final" / agent))
        assert names_agent(str(out / "final" / f"critic_{agent}"))
        assert critic.config.num_labels == 1


def test_returns_are_the_team_rewards_still_to_come(tokenizer: Any, tmp_path: Path) -> None:
    """Relay pays the mover a tenth of the move number and the others -0.01, and everyone +1 at the
    end. With team credit, gamma = lambda = 1, each reply token's return is the sum, over the
    agent's turns from this one on, of the mean reward of the episode's agents for that turn."""
    config = _small(tmp_path / "run", whiten_advantages=False, lam=1.0, gamma=1.0, max_turns=2)
    engine = RolloutEngine(
        lambda: Relay(num_agents=2, rounds=2),
        DigitGenerator(tokenizer),
        tokenizer,
        SamplingParams(max_new_tokens=4),
    )
    with engine:
        collected = collect_rows(engine, TaskSeeds(0, 0, 1), config)
    rows = collected.rows
    by_episode: dict[int | None, list[list[float]]] = {}
    for row in rows:
        by_episode.setdefault(row.episode, []).append(list(row.turn_rewards))
    models = {agent: PolicyWithValueHead(build_tiny_model(tokenizer, seed=0)) for agent in ("r0", "r1")}
    run = RunConfig(output_dir=str(tmp_path / "session"), progress_bar=False)
    with TrainingSession(models, run=run, optim=OptimConfig(), dist=DistributedConfig()) as session:
        for agent in ("r0", "r1"):
            own = [i for i, row in enumerate(rows) if row.agent == agent]
            credited = [dataclasses.replace(rows[i], turn_rewards=collected.turn_rewards[i]) for i in own]
            batch = collate(credited, tokenizer.pad_token_id)
            targets = ippo.prepare_agent(session, agent, batch, config)
            for n, i in enumerate(own):
                turns = by_episode[rows[i].episode]
                team = [sum(agent_turns[k] for agent_turns in turns) / len(turns) for k in range(2)]
                for k, (start, end) in enumerate(rows[i].turn_spans):
                    expected = sum(team[k:])
                    got = targets.returns[n, start:end]
                    assert torch.allclose(got, torch.full_like(got, expected), rtol=1e-5), (agent, k)
            # The value heads start at zero: the advantages are the returns.
            assert torch.allclose(targets.advantages, targets.returns * batch.mask, rtol=1e-5, atol=1e-7)
    # Not vacuous: the team's credit differs from what the env paid each agent.
    assert any(list(row.turn_rewards) != collected.turn_rewards[i] for i, row in enumerate(rows))


def test_an_agent_learns_only_from_its_own_rewards(tmp_path: Path) -> None:
    """p1 is never paid anything: with its own credit, a zero critic and zero rewards, its policy
    gets no gradient, while p0, paid by its digit, does."""

    class OnlyFirst(Coordinate):
        def _act(self, actions: Any) -> Outcome:
            outcome = super()._act(actions)
            rewards = {agent: reward if agent == "p0" else 0.0 for agent, reward in outcome.rewards.items()}
            return Outcome(rewards=rewards, done=outcome.done, infos=outcome.infos)

    config = _small(tmp_path / "run", env_id="only-first", credit="agent", group_size=2, temperature=2.0)
    ippo.train(config, env=OnlyFirst)
    rows = _metrics(tmp_path / "run")
    assert all(row["grad_norm/p1"] == 0.0 for row in rows)
    assert all(row["value/p1/loss"] == 0.0 for row in rows)
    assert rows[0]["grad_norm"] > 0  # p0's
    assert rows[0]["agent/p0/reward"] > 0 and rows[0]["agent/p1/reward"] == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"policies": "shared"}, "policies='per_agent'"),
        ({"group_by": "agent_turn"}, "group_by set the MAGRPO family"),
        ({"dynamic_sampling": True, "aggregation": "token_mean"}, "aggregation, dynamic_sampling"),
        ({"critic_model": "tiny"}, 'needs critic="model"'),
        ({"lam": 1.5}, "gamma and lam"),
        ({"vf_coef": -1.0}, r"^vf_coef must be a finite number >= 0, got -1.0$"),
        ({"group_size": 0}, "group_size must be at least 1"),
        (
            {"opponent_pool": 2},
            r"^opponent_pool set the MAGRPO family's self-play; IPPO has no self-play opponents",
        ),
        ({"eval_every": 1, "rule_reply": "no"}, "^eval_every, rule_reply set the MAGRPO family's self-play"),
        ({"snapshot_every": 3}, "^snapshot_every set the MAGRPO family's self-play"),
        ({"eval_tasks": 4}, "^eval_tasks set the MAGRPO family's self-play"),
        ({"max_sampling_rounds": 2}, "^max_sampling_rounds set the MAGRPO family's group advantages"),
    ],
)
def test_settings_that_do_not_fit_are_refused(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _small(tmp_path / "run", **changes)


def test_a_config_file_setting_what_ippo_does_not_read_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_loading(*args: Any) -> Any:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(ippo, "load_policies", no_loading)
    path = tmp_path / "run.yaml"
    path.write_text(f"env_id: mrlm/TeamSum-v0\nsnapshot_every: 3\nrun:\n  output_dir: {tmp_path / 'run'}\n")
    assert main(["ippo", "--config", str(path)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "snapshot_every set the MAGRPO family's self-play; IPPO has no self-play opponents" in line


def _two_writers(*agents: str) -> DatasetTaskEnv:
    return DatasetTaskEnv(
        [{"p": "x"}],
        formatters=[lambda row: "write", lambda row: "criticise"],
        reward=lambda replies, row: float(len(replies[0]) > len(replies[1])),
        agents=list(agents),
    )


@pytest.mark.parametrize("agents", [("author", "critic_1"), ("writer", "critic_writer")])
def test_an_agent_named_like_a_critic_is_trained_as_a_policy(tmp_path: Path, agents: tuple[str, str]) -> None:
    """With value heads there is no separate critic: an agent called critic_... is a policy like the
    other, trained at the policy's learning rate, never taken for another agent's critic."""
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    config = _small(tmp_path / "run", env_id="names", prompts_per_step=1, mini_batch_size=1, run=run)
    ippo.train(config, env=lambda: _two_writers(*agents))
    (row,) = _metrics(tmp_path / "run")
    assert row["lr"] == row[f"lr/{agents[1]}"] == pytest.approx(1e-3)  # not critic_learning_rate
    assert row[f"grad_norm/{agents[1]}"] > 0


@pytest.mark.parametrize(
    ("agents", "changes", "repeated"),
    [
        (("writer", "critic_writer"), {"critic": "model"}, "critic_writer"),
        (("writer", "reference_writer"), {"kl_coef": 0.1}, "reference_writer"),
    ],
)
def test_agent_names_that_would_name_two_models_are_refused_before_any_model_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agents: tuple[str, ...],
    changes: dict[str, Any],
    repeated: str,
) -> None:
    def no_loading(*args: Any) -> Any:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(ippo, "load_policies", no_loading)
    config = _small(tmp_path / "run", env_id="names", **changes)
    with pytest.raises(MultiAgentSetupError, match=f"two models called '{repeated}'") as refused:
        ippo.train(config, env=lambda: _two_writers(*agents))
    assert explains_itself(refused.value)  # the command line prints it as one line


def test_a_value_head_is_saved_beside_each_agents_policy(tmp_path: Path) -> None:
    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    final = ippo.train(_small(tmp_path / "run", env_id="coordinate", run=run), env=Coordinate)
    for agent in ("p0", "p1"):
        assert (final / agent / VALUE_HEAD_FILE).is_file()
        AutoModelForCausalLM.from_pretrained(final / agent)


def test_ippo_is_listed() -> None:
    assert "ippo" in ALGORITHMS


def test_every_documented_metric_is_in_the_guide() -> None:
    text = (Path(__file__).parents[3] / "docs" / "multi_agent.md").read_text()
    for key in ippo.METRICS:
        assert f"`{key}`" in text, key


def test_help_shows_only_what_ippo_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["ippo", "--help"])
    text = capsys.readouterr().out
    assert "--critic" in text and "--vf-coef" in text
    for flag in ("--group-by", "--aggregation", "--dynamic-sampling", "--opponent-pool", "--eval-every"):
        assert flag not in text, flag
