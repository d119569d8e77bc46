"""The MAGRPO family end to end on small multi-agent envs: every variant trains through the command
line, saves every agent's model, logs per agent and per policy, and refuses bad settings clearly."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from mrlm.train.algorithms import ALGORITHMS, magrpo
from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.cli import main
from mrlm.train.loop import RunConfig
from mrlm.train.policy import OPENING_FILE, names_agent
from tests.train.rollout.scripted_multi import Coordinate

VARIANTS = ("magrpo", "mareinforce", "marloo", "maremax")


def _small(output_dir: Path, **changes: Any) -> MAGRPOConfig:
    settings: dict[str, Any] = {
        "group_size": 2,
        "prompts_per_step": 2,
        "max_new_tokens": 4,
        "run": RunConfig(output_dir=str(output_dir), max_steps=2, progress_bar=False),
    }
    settings.update(changes)
    return MAGRPOConfig(**settings)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_trains_one_model_per_agent_from_the_command_line(tmp_path: Path, variant: str) -> None:
    out = tmp_path / variant
    argv = [variant, "--env-id", "mrlm/TeamSum-v0", "--policies", "per_agent", "--group-size", "2"]
    argv += ["--prompts-per-step", "2", "--max-new-tokens", "6", "--run.output-dir", str(out)]
    argv += ["--run.max-steps", "2", "--run.no-progress-bar"]
    assert main(argv) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    for key in (
        "reward",
        "episode_success",
        "agent/first/reward",
        "agent/second/success",
        "grad_norm/second",
    ):
        assert key in rows[0], key
    assert "policy/first/clip_fraction" in rows[0]
    for agent in ("first", "second"):
        model = AutoModelForCausalLM.from_pretrained(out / "final" / agent)
        tokenizer = AutoTokenizer.from_pretrained(out / "final" / agent)
        assert model.config.vocab_size >= len(tokenizer)


@pytest.mark.slow
def test_a_shared_policy_plays_every_agent_on_an_env_factory_with_a_reference(tmp_path: Path) -> None:
    config = _small(tmp_path / "run", env_id="coordinate", kl_coef=0.1, num_iterations=2, micro_batch_size=1)
    final = magrpo.train(config, env=lambda: Coordinate(num_agents=3))
    assert (final / "config.json").is_file()  # one model: saved in final/ itself
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert {"agent/p0/reward", "agent/p1/reward", "agent/p2/reward"} <= set(rows[0])
    assert not any(key.startswith("policy/") for key in rows[0])  # one policy: its stats are the step's
    assert rows[1]["kl"] > 0  # the reference differs from the policy after the first update
    assert rows[0]["reward/coordinate"] == pytest.approx(rows[0]["sampled_reward"], rel=1e-6)


def test_dynamic_sampling_drops_flat_tasks_and_still_trains(tmp_path: Path) -> None:
    """A reward that never varies: every task is flat, none is kept, and the step trains on the last
    round (zero advantages) instead of failing."""
    from mrlm.envs import DatasetTaskEnv

    def constant(replies: list[str], record: dict[str, Any]) -> float:
        return 1.0

    def make_env() -> DatasetTaskEnv:
        return DatasetTaskEnv([{"q": "a"}, {"q": "b"}], formatters=[lambda r: r["q"]] * 2, reward=constant)

    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    magrpo.train(
        _small(tmp_path / "run", dynamic_sampling=True, max_sampling_rounds=2, run=run), env=make_env
    )
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["groups_kept"] == 0.0
    assert row["sampled_reward"] == row["reward"] == 1.0
    assert row["loss"] == 0.0


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"agent_models": {"p0": "tiny"}}, ValueError, "needs policies='per_agent'"),
        # An empty path would resolve to the current directory, which the user never named.
        (
            {"policies": "per_agent", "agent_models": {"p0": "tiny", "p1": ""}},
            ValueError,
            "agent_models gives agent 'p1' an empty model name or path",
        ),
        ({"joint": "cross", "credit": "team"}, ValueError, "use credit='agent'"),
        ({"group_size": 1}, ValueError, "group_size must be at least 2"),
        ({"env_kwargs": "[1]"}, ValueError, "JSON object"),
    ],
)
def test_contradicting_settings_are_refused(
    tmp_path: Path, changes: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        _small(tmp_path / "run", **changes)


def test_an_agent_the_env_lacks_is_named(tmp_path: Path) -> None:
    config = _small(tmp_path / "run", policies="per_agent", agent_models={"p7": "tiny"})
    with pytest.raises(ValueError, match=r"agents \['p7'\].*\['p0', 'p1'\]"):
        magrpo.train(config, env=lambda: Coordinate(num_agents=2))


@pytest.mark.parametrize("policies", ["shared", "per_agent"])
def test_final_holds_each_agents_model_by_name_even_for_an_only_agent(tmp_path: Path, policies: str) -> None:
    from mrlm.envs import DatasetTaskEnv

    def make_env() -> DatasetTaskEnv:
        return DatasetTaskEnv([{"q": "a"}], formatters=[lambda r: r["q"]], reward=lambda replies, r: 1.0)

    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    final = magrpo.train(
        _small(tmp_path / "run", policies=policies, prompts_per_step=1, run=run), env=make_env
    )
    held = final / "agent_0" if policies == "per_agent" else final  # as the docs say for each
    assert (held / "config.json").is_file() and (held / "tokenizer.json").is_file()
    assert (final / "agent_0").exists() is (policies == "per_agent")


def test_a_single_agent_env_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="use grpo or ppo"):
        magrpo.train(_small(tmp_path / "run", env_id="mrlm/Math-v0"))


def test_env_kwargs_do_not_go_with_a_factory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="env factory"):
        magrpo.train(_small(tmp_path / "run", env_kwargs='{"rounds": 2}'), env=Coordinate)


def test_the_variants_are_listed() -> None:
    assert set(VARIANTS) <= set(ALGORITHMS)


def test_every_step_metric_is_documented() -> None:
    import dataclasses

    from mrlm.train.algorithms.multi_agent import StepStats

    text = (Path(__file__).parents[3] / "docs" / "multi_agent.md").read_text()
    for field in dataclasses.fields(StepStats):
        assert f"| `{field.name}` |" in text, field.name


def test_turn_grouping_trains_on_a_two_round_game(tmp_path: Path) -> None:
    """AT-GRPO on a two-round game: each row's two replies get their own turns' advantages."""
    config = _small(tmp_path / "run", group_by="agent_turn", credit="agent", max_turns=2)
    magrpo.train(config, env=lambda: Coordinate(num_agents=2, rounds=2))
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert "success/turn2" in row  # both rounds were played and trained
    assert row["tokens"] > 0 and row["grad_norm"] > 0


def test_turn_grouping_needs_aligned_episodes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs joint='align'"):
        _small(tmp_path / "run", group_by="agent_turn", joint="cross", credit="agent")


def test_dynamic_sampling_drops_flat_groups_per_agent(tokenizer: Any, tmp_path: Path) -> None:
    """p0's samples differ in reward, p1's never do: p0 keeps its groups with signal; p1, having
    none, trains on its last rollout's groups (zero advantages) so that its policy still has rows."""
    from mrlm.envs import Outcome
    from mrlm.train.algorithms.multi_agent import collect_rows
    from mrlm.train.algorithms.onpolicy import TaskSeeds
    from mrlm.train.generation import SamplingParams
    from mrlm.train.rollout import RolloutEngine
    from tests.train.rollout.scripted_multi import DigitGenerator

    class Lopsided(Coordinate):
        def _act(self, actions: Any) -> Outcome:
            outcome = super()._act(actions)
            digit = int(actions["p0"].strip()[0])
            return Outcome(rewards={"p0": 0.1 * digit, "p1": 1.0}, done=outcome.done, infos=outcome.infos)

    config = _small(
        tmp_path / "run", credit="agent", dynamic_sampling=True, max_sampling_rounds=3, group_size=3
    )
    engine = RolloutEngine(Lopsided, DigitGenerator(tokenizer), tokenizer, SamplingParams(max_new_tokens=4))
    with engine:
        collected = collect_rows(engine, TaskSeeds(0, 0, 1), config)
    agents = [row.agent for row in collected.rows]
    # Round 1 keeps p0's two groups; p1 never gets one, so rounds 2 and 3 sample 2 tasks each and
    # p1 trains on its two groups of round 3.
    assert agents == ["p0"] * 6 + ["p1"] * 6
    assert [row.seed for row in collected.rows[6:]] == [4, 4, 4, 5, 5, 5]
    assert collected.groups_kept == pytest.approx(2 / 12)  # 3 rollouts x 2 tasks x 2 agents sampled
    assert collected.rewards.tolist() == pytest.approx([0.0, 0.1, 0.2] * 2 + [1.0] * 6)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env-id", "mrlm/Math-v0"], "SingleAgentEnvError: MathEnv has no agents.*use grpo or ppo"),
        (
            ["--policies", "per_agent", "--agent-models", "third", "tiny"],
            r"agents \['third'\] .* \['first', 'second'\]",
        ),
    ],
)
def test_the_cli_names_settings_that_do_not_fit_the_env_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status = main(["magrpo", "--run.output-dir", str(tmp_path / "run"), *argv])
    err = capsys.readouterr().err.strip()
    assert status == 1
    assert len(err.splitlines()) == 1 and err.startswith("mrlm-train magrpo: ")
    assert re.search(message, err), err


def test_too_many_cross_joint_actions_are_refused_in_one_line_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mrlm.train.algorithms import multi_agent

    def no_loading(*args: Any) -> Any:
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(multi_agent, "load_policies", no_loading)
    argv = ["--joint", "cross", "--credit", "agent", "--group-size", "8", "--env-kwargs", '{"num_agents": 4}']
    assert main(["magrpo", "--run.output-dir", str(tmp_path / "run"), *argv]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "8 samples for each of 4 agents make 4096 joint actions per round" in line
    assert line.endswith("(group_size at most 4 with 4 agents); lower group_size or use joint='align'")


@pytest.mark.parametrize("policies", ["shared", "per_agent", "lora"])
def test_each_agent_s_own_model_gets_its_formatter_s_prompt_as_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policies: str
) -> None:
    """A ported CoMLRL run: with one model (or adapter) per agent, each prompt is the agent's formatter text in
    the chat template and nothing else, the tokens CoMLRL renders; a shared model is told its role."""
    import mrlm.train.rollout.context as context
    from mrlm.envs import DatasetTaskEnv

    prompts: list[tuple[str, tuple[int, ...]]] = []
    generate_round = context.generate_round

    def recording(table: Any, requests: Any, call: int, turn: int) -> Any:
        prompts.extend((policy, tuple(ids)) for policy, ids in requests)
        return generate_round(table, requests, call, turn)

    monkeypatch.setattr(context, "generate_round", recording)
    records = [{"q": "cats"}, {"q": "dogs"}]
    formatters = [lambda r: f"Summarise {r['q']}.", lambda r: f"Expand on {r['q']}."]

    def make_env() -> DatasetTaskEnv:
        return DatasetTaskEnv(records, formatters=formatters, reward=lambda replies, r: 1.0)

    run = RunConfig(output_dir=str(tmp_path / "run"), max_steps=1, progress_bar=False)
    final = magrpo.train(_small(tmp_path / "run", policies=policies, run=run), env=make_env)
    tokenizer = AutoTokenizer.from_pretrained(final if policies == "shared" else final / "agent_0")

    def rendered(text: str) -> tuple[int, ...]:  # as CoMLRL does: the template's text, then its tokens
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        return tuple(tokenizer(chat, add_special_tokens=False)["input_ids"])

    # Each agent's own model records its opening, for evaluations to open its conversations the same way.
    if policies == "shared":
        assert names_agent(str(final)) and not (final / OPENING_FILE).exists()
    else:
        assert not names_agent(str(final / "agent_0")) and not names_agent(str(final / "agent_1"))
    formatted = {(f"agent_{k}", rendered(f(r))) for k, f in enumerate(formatters) for r in records}
    assert prompts
    for policy, ids in prompts:
        if policies != "shared":  # its own model or adapter
            assert (policy, ids) in formatted
        else:
            assert all(ids != expected for _, expected in formatted)
            assert "You are agent_" in tokenizer.decode(list(ids))
