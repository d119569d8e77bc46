"""Playing tasks with scripted generators whose successes are known, so rates and pass@k are exact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import mrlm.envs
from mrlm.train.algorithms.multi_agent import MultiAgentSetupError
from mrlm.train.evaluation import (
    EnvFailedError,
    EnvSpec,
    Players,
    load_players,
    play_episodes,
    probe_env,
    summarise,
)
from mrlm.train.evaluation.config import counted, describe_plan
from mrlm.train.evaluation.report import TEAM
from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import DEFAULT_POLICY, Policy
from tests.train.evaluation.scripted import AdderGenerator
from tests.train.one_turn_env import OneTurnEnv

#: Tasks "What is a + 1?" for a = 0..4; seeds s serve record s % 5.
RECORDS = [{"question": f"What is {a} + 1?", "answer": f"#### {a + 1}"} for a in range(5)]
MATH = EnvSpec("mrlm/Math-v0", "mrlm/Math-v0", {"records": RECORDS})
GREEDY = SamplingParams(max_new_tokens=8, temperature=0.0)


def _single(generator: Any, tokenizer: Any) -> Players:
    return Players({DEFAULT_POLICY: Policy(generator, tokenizer)}, lambda agent: DEFAULT_POLICY, {})


def test_success_rate_and_pass_at_k_of_known_successes(tokenizer: Any) -> None:
    # Task a: the first a of its 4 samples are right, so c = a successes out of n = 4.
    players = _single(AdderGenerator(tokenizer, right=lambda x, y: x), tokenizer)
    rows = play_episodes([MATH], players, range(10, 15), 4, GREEDY, batch_size=8)
    assert len(rows) == 20
    assert [(row.seed, row.sample) for row in rows[:5]] == [(10, 0), (10, 1), (10, 2), (10, 3), (11, 0)]
    report = summarise(rows, ks=(1, 2, 4))
    score = report.envs["mrlm/Math-v0"]
    # c = 0..4 of 4: success = 10/20; pass@2 = mean(0, 1 - 3/6, 1 - 1/6, 1, 1) = 10/3 / 5;
    # pass@4 = share of tasks with a success = 4/5.
    assert (score.tasks, score.episodes) == (5, 20)
    assert score.success_rate == pytest.approx(0.5, rel=1e-12)
    assert score.mean_reward == pytest.approx(0.5, rel=1e-12)
    assert score.pass_at == pytest.approx({1: 0.5, 2: (10 / 3) / 5, 4: 0.8}, rel=1e-12)


def test_multi_agent_with_a_model_per_agent_on_team_sum(tokenizer: Any) -> None:
    # first always answers its own part right; second only when its x is even (however many
    # copies of a question a call holds: two tasks may deal an agent the same part).
    always = 10**6
    policies = {
        "first": Policy(AdderGenerator(tokenizer, right=lambda x, y: always), tokenizer),
        "second": Policy(AdderGenerator(tokenizer, right=lambda x, y: always * (x % 2 == 0)), tokenizer),
    }
    players = Players(policies, lambda agent: str(agent), {})
    seeds = list(range(100, 140))
    spec = EnvSpec("mrlm/TeamSum-v0", "mrlm/TeamSum-v0")
    rows = play_episodes([spec], players, seeds, 1, GREEDY, kind="parallel", batch_size=16)

    # The truth, from the env itself: the team is right exactly when second's x is even.
    env = mrlm.envs.make("mrlm/TeamSum-v0", kind="parallel")
    even = []
    for seed in seeds:
        env.reset(seed=seed)
        even.append(env.unwrapped.parts["second"].x % 2 == 0)
    env.close()
    assert 0 < sum(even) < len(seeds)  # both outcomes occur, so the test can tell them apart

    assert {(row.agent, row.policy) for row in rows} == {("first", "first"), ("second", "second")}
    report = summarise(rows)
    expected = sum(even) / len(seeds)
    assert report.envs["mrlm/TeamSum-v0"].success_rate == pytest.approx(expected, rel=1e-12)
    # TeamSum pays every agent the team's reward, so each agent's side succeeds with the team.
    for agent in ("first", "second"):
        assert report.agents["mrlm/TeamSum-v0"][agent].success_rate == pytest.approx(expected, rel=1e-12)
    assert TEAM not in report.agents["mrlm/TeamSum-v0"]


def test_load_players_loads_each_model_once(saved_dir: Path) -> None:
    team = {"mrlm/TeamSum-v0": ["first", "second"]}
    shared = load_players(str(saved_dir), {}, team, device="cpu")
    assert list(shared.policies) == [DEFAULT_POLICY]
    assert shared.agent_policies("first") == shared.agent_policies("second") == DEFAULT_POLICY

    own = load_players("tiny", {"second": str(saved_dir)}, team, device="cpu")
    assert own.models == {DEFAULT_POLICY: "tiny", "second": str(saved_dir)}
    assert (own.agent_policies("first"), own.agent_policies("second")) == (DEFAULT_POLICY, "second")
    assert own.policies[DEFAULT_POLICY].generator is not own.policies["second"].generator

    same = load_players(str(saved_dir), {"second": str(saved_dir)}, team, device="cpu")
    assert same.policies[DEFAULT_POLICY] is same.policies["second"]

    # A mixture of a single-agent env and a team env: the single agent plays the shared model.
    mixed = load_players("tiny", {"first": "tiny"}, {"math": None, **team}, device="cpu")
    assert list(mixed.policies) == [DEFAULT_POLICY, "first"] and mixed.agent_policies(None) == DEFAULT_POLICY


def test_load_players_refuses_an_agent_no_env_has() -> None:
    with pytest.raises(MultiAgentSetupError, match=r"agent_models names agents \['third'\]"):
        load_players("tiny", {"third": "tiny"}, {"mrlm/TeamSum-v0": ["first", "second"]})
    with pytest.raises(MultiAgentSetupError, match="no env has"):
        load_players("tiny", {"first": "tiny"}, {"mrlm/Math-v0": None})


def test_probe_returns_the_agents() -> None:
    assert probe_env(MATH, None, 0) is None
    assert probe_env(EnvSpec("t", "mrlm/TeamSum-v0"), "aec", 0) == ["first", "second"]


class _StepFails(OneTurnEnv):
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise ZeroDivisionError("the env divided by zero")


class _ResetFails(_StepFails):
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        raise KeyError("no such task")


@pytest.fixture
def broken_envs() -> Iterator[None]:
    gymnasium.register("mrlm-test/StepFails-v0", entry_point=f"{__name__}:_StepFails")
    gymnasium.register("mrlm-test/ResetFails-v0", entry_point=f"{__name__}:_ResetFails")
    yield
    gymnasium.registry.pop("mrlm-test/StepFails-v0")
    gymnasium.registry.pop("mrlm-test/ResetFails-v0")


@pytest.mark.usefixtures("broken_envs")
def test_an_env_that_raises_is_named_and_a_generator_that_raises_is_not(tokenizer: Any) -> None:
    players = _single(AdderGenerator(tokenizer, right=lambda x, y: 1), tokenizer)
    spec = EnvSpec("mrlm-test/StepFails-v0", "mrlm-test/StepFails-v0")
    with pytest.raises(
        EnvFailedError, match=r"'mrlm-test/StepFails-v0' raised .* seeds 3\.\.4: ZeroDivisionError"
    ):
        play_episodes([spec], players, [3, 4], 1, GREEDY)
    with pytest.raises(EnvFailedError, match=r"failed at reset\(seed=7\): KeyError"):
        probe_env(EnvSpec("r", "mrlm-test/ResetFails-v0"), None, 7)

    class Broken:
        def generate(self, prompts: Any, params: Any) -> Any:
            raise RuntimeError("the model broke")

    with pytest.raises(RuntimeError, match="the model broke"):
        play_episodes([MATH], _single(Broken(), tokenizer), [3], 1, GREEDY)


def test_a_served_env_plays_as_the_local_one(tokenizer: Any) -> None:
    from mrlm.envs.server import serve

    players = _single(AdderGenerator(tokenizer, right=lambda x, y: x), tokenizer)
    server = serve(envs=("mrlm/Math-v0",), host="127.0.0.1", port=0)
    try:
        remote = EnvSpec("remote", f"grpc://{server.address}/mrlm/Math-v0", {"records": RECORDS})
        assert probe_env(remote, None, 0) is None
        served = play_episodes([remote], players, range(5), 2, GREEDY)
    finally:
        server.stop(grace_s=0)
    local = play_episodes([MATH], players, range(5), 2, GREEDY)
    assert [(t.seed, t.messages, t.turn_rewards) for t in served] == [
        (t.seed, t.messages, t.turn_rewards) for t in local
    ]
    # Task a: c = min(a, 2) of 2 samples right, for a = 0..4 -> 7 of 10.
    assert summarise(served).envs["remote"].success_rate == pytest.approx(0.7, rel=1e-12)


@pytest.mark.parametrize(
    ("seeds", "per_task", "unit", "envs", "line"),
    [
        ([7], 1, "sample", 1, "seeds: 7 (1 task x 1 sample)"),
        ([0, 1, 2], 4, "sample", 2, "seeds: 0..2 (3 tasks x 4 samples, in each of 2 envs)"),
        ([5, 3], 1, "episode", 1, "seeds: 5, 3 (2 tasks x 1 episode)"),
        ([], 2, "episode", 1, "seeds: none (0 tasks x 2 episodes)"),
    ],
)
def test_the_plan_line_counts_in_words(
    seeds: list[int], per_task: int, unit: str, envs: int, line: str
) -> None:
    assert describe_plan(seeds, per_task, unit, envs) == line


def test_counted_uses_the_plural_unless_the_count_is_one() -> None:
    assert [counted(n, "trajectory", "trajectories") for n in (0, 1, 2)] == [
        "0 trajectories",
        "1 trajectory",
        "2 trajectories",
    ]
    assert counted(1, "task") == "1 task" and counted(5, "task") == "5 tasks"


def test_a_model_trained_without_the_agent_s_name_is_played_without_it(
    saved_dir: Path, tmp_path: Path
) -> None:
    """A per_agent run's final/<agent>/ records that its conversations opened without the agent's
    name: evaluated through --model or --agent-models, it plays that way; an unmarked model names
    the agent it plays."""
    import shutil

    from mrlm.train.policy import mark_unnamed_opening, names_agent

    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        shutil.copytree(saved_dir, directory)
        mark_unnamed_opening(directory)
    assert (names_agent(str(first)), names_agent(str(saved_dir)), names_agent("tiny")) == (False, True, True)
    team = {"mrlm/TeamSum-v0": ["first", "second"]}
    sampling = SamplingParams(max_new_tokens=2, temperature=0.0)
    spec = EnvSpec("mrlm/TeamSum-v0", "mrlm/TeamSum-v0")

    def named(model: Path, agent_models: dict[str, str]) -> dict[str | None, bool]:
        players = load_players(str(model), agent_models, team, device="cpu")
        rows = play_episodes([spec], players, [3], 1, sampling, kind="parallel")
        return {row.agent: row.messages[0]["content"].endswith(f"You are {row.agent}.") for row in rows}

    assert named(first, {"second": str(second)}) == {"first": False, "second": False}
    assert named(first, {}) == {"first": False, "second": False}
    assert named(saved_dir, {"second": str(second)}) == {"first": True, "second": False}


def test_a_user_path_is_read_and_a_record_that_says_nothing_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mrlm.train.policy import OPENING_FILE, mark_unnamed_opening, names_agent

    monkeypatch.setenv("HOME", str(tmp_path))
    mark_unnamed_opening(tmp_path)
    assert names_agent("~") is False
    for text in ("not json", '{"names_agent": 3}', "[1]", "{}", "null", "[" * 100_000):
        (tmp_path / OPENING_FILE).write_text(text)
        with pytest.warns(UserWarning, match="does not say whether to name the agent"):
            assert names_agent(str(tmp_path)) is True
