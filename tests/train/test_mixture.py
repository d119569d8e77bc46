"""Env mixtures: parsing with clear errors, draws by weight that depend only on the seeds, and a
GRPO run on two envs that logs each and resumes exactly."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from mrlm.train.algorithms.grpo import GRPOConfig, train
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.mixture import EnvMixture, MixtureEntry, parse_mixture


def test_a_mixture_is_parsed_with_defaults() -> None:
    entries = parse_mixture(
        '[{"id": "mrlm/Math-v0", "weight": 2, "kwargs": {"level": 1}}, {"id": "mrlm/Math-v0", "name": "hard"}]'
    )
    assert entries == [
        MixtureEntry("mrlm/Math-v0", 2.0, {"level": 1}),
        MixtureEntry("mrlm/Math-v0", 1.0, {}, "hard"),
    ]
    assert [entry.label for entry in entries] == ["mrlm/Math-v0", "hard"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[{", "not valid JSON"),
        ("[" * 100_000, "nested too deeply"),
        ('{"id": "x"}', "non-empty JSON list"),
        ("[]", "non-empty JSON list"),
        ('["mrlm/Math-v0"]', "must be an object"),
        ('[{"weight": 1}]', "needs an 'id'"),
        ('[{"id": "x", "wieght": 1}]', r"unknown keys \['wieght'\]"),
        ('[{"id": "x", "weight": -1}]', "finite number >= 0"),
        ('[{"id": "x", "weight": true}]', "finite number >= 0"),
        ('[{"id": "x", "kwargs": [1]}]', "'kwargs' must be an object"),
        ('[{"id": "x"}, {"id": "x"}]', "share the names"),
        ('[{"id": "x", "weight": 0}]', "every weight"),
    ],
)
def test_bad_mixtures_are_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_mixture(text)


def test_weights_near_floats_limit_draw_as_their_ratios() -> None:
    # Each finite, their sum is not: every task went to the last env.
    entries = [MixtureEntry("a", 1e308), MixtureEntry("b", 1e308), MixtureEntry("c", 0.5e308)]
    mixture = EnvMixture(entries, seed=0)
    counts = [0, 0, 0]
    for seed in range(5000):
        counts[mixture.choose(seed)] += 1
    assert counts[0] == pytest.approx(2000, rel=0.1) and counts[1] == pytest.approx(2000, rel=0.1)
    assert counts[2] == pytest.approx(1000, rel=0.15)


def test_draws_follow_the_weights_and_depend_only_on_the_seeds() -> None:
    entries = [MixtureEntry("a", 3.0), MixtureEntry("b", 0.0), MixtureEntry("c", 1.0)]
    mixture = EnvMixture(entries, seed=5)
    draws = [mixture.choose(task) for task in range(8000)]
    counts = Counter(draws)
    assert counts[1] == 0  # weight 0: never
    assert counts[0] / len(draws) == pytest.approx(0.75, abs=0.03)
    assert draws == [EnvMixture(entries, seed=5).choose(task) for task in range(8000)]
    assert draws != [EnvMixture(entries, seed=6).choose(task) for task in range(8000)]


def test_grpo_on_a_mixture_logs_each_env_and_resumes_exactly(tmp_path: Path) -> None:
    mixture = json.dumps(
        [
            {"id": "mrlm/Math-v0", "weight": 1, "kwargs": {"level": 1}, "name": "easy"},
            {"id": "mrlm/Math-v0", "weight": 1, "kwargs": {"level": 3}, "name": "hard"},
        ]
    )

    def config(output: Path, **run: object) -> GRPOConfig:
        return GRPOConfig(
            env_mixture=mixture,
            group_size=2,
            prompts_per_step=4,
            max_new_tokens=4,
            micro_batch_size=4,
            run=RunConfig(output_dir=str(output), progress_bar=False, **run),  # type: ignore[arg-type]
            optim=OptimConfig(learning_rate=1e-3),
        )

    train(config(tmp_path / "whole", max_steps=3))
    whole = [json.loads(line) for line in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    logged = {key for row in whole for key in row if key.startswith("reward/")}
    assert logged == {"reward/easy", "reward/hard"}
    first = config(tmp_path / "split", max_steps=2, save_every=2)
    train(first)
    train(dataclasses.replace(first, run=dataclasses.replace(first.run, max_steps=3, resume="latest")))
    split = [json.loads(line) for line in (tmp_path / "split" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in split] == [1, 2, 3]
    for a, b in zip(whole, split, strict=True):
        assert {k for k in a if k.startswith("reward/")} == {k for k in b if k.startswith("reward/")}
        assert a["reward"] == b["reward"]
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5, abs=1e-7)
