"""SFT: the loss falls and a memorised reply comes back greedily; micro-batching, packing and resuming
do not change the updates; the data order is a resumable function of the seed; configs, YAML files
and the command line are checked."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mrlm.train.algorithms.sft import EpochSampler, SFTConfig, train
from mrlm.train.cli import main
from mrlm.train.config_io import ConfigError, load_config
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.loop import DistributedConfig, OptimConfig, RunConfig

ROOT = Path(__file__).resolve().parents[3]

RECORDS: list[dict[str, Any]] = [
    {
        "messages": [
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris is the capital."},
        ]
    },
    {"prompt": "Say hi.", "completion": " Hello there!"},
    {"messages": [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."}]},
    {"messages": [{"role": "user", "content": "Count to three."}, {"role": "assistant", "content": "1 2 3"}]},
]


def _data(tmp_path: Path, records: list[dict[str, Any]] = RECORDS, name: str = "data.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def _config(tmp_path: Path, name: str = "run", **overrides: object) -> SFTConfig:
    base: dict[str, object] = {
        "data": _data(tmp_path),
        "batch_size": 4,
        "micro_batch_size": 2,
        "max_length": 64,
        "run": RunConfig(output_dir=str(tmp_path / name), max_steps=4, progress_bar=False),
        "optim": OptimConfig(learning_rate=3e-3),
    }
    base.update(overrides)
    return SFTConfig(**base)  # type: ignore[arg-type]


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _weights(final: Path) -> dict[str, torch.Tensor]:
    return AutoModelForCausalLM.from_pretrained(final).state_dict()


def _assert_same_weights(a: Path, b: Path, atol: float = 1e-6) -> None:
    first, second = _weights(a), _weights(b)
    assert first.keys() == second.keys()
    for name in first:
        assert torch.allclose(first[name], second[name], atol=atol), name


def test_loss_falls_and_the_memorised_reply_comes_back_greedily(tmp_path: Path) -> None:
    final = train(_config(tmp_path, run=RunConfig(str(tmp_path / "run"), max_steps=60, progress_bar=False)))
    rows = _metrics(tmp_path / "run")
    assert [row["step"] for row in rows] == list(range(1, 61))
    assert all(key in rows[0] for key in ("loss", "accuracy", "tokens", "epoch", "grad_norm", "lr"))
    assert rows[-1]["loss"] < 0.1 * rows[0]["loss"]
    assert rows[-1]["accuracy"] == 1.0

    model, tokenizer = AutoModelForCausalLM.from_pretrained(final), AutoTokenizer.from_pretrained(final)
    prompt = tokenizer.encode(
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    )
    (reply,) = HFGenerator(model, tokenizer).generate(
        [prompt], SamplingParams(max_new_tokens=16, temperature=0)
    )
    assert tokenizer.decode(reply.token_ids) == "Paris is the capital.<|im_end|>"


def test_micro_batches_and_packing_give_the_same_updates(tmp_path: Path) -> None:
    # A large eps makes Adam's step follow the gradient: with the default, a gradient that is 0 in
    # exact arithmetic (the key bias's) becomes a full step whose sign is float noise.
    optim = OptimConfig(learning_rate=0.1, adam_eps=1.0)
    whole = train(_config(tmp_path, "whole", micro_batch_size=4, max_length=48, optim=optim))
    split = train(_config(tmp_path, "split", micro_batch_size=1, max_length=48, optim=optim))
    # Two examples per packed row of 48 tokens, so packed micro-batches hold several examples.
    packed = train(_config(tmp_path, "packed", packing=True, micro_batch_size=1, max_length=48, optim=optim))
    losses = [[row["loss"] for row in _metrics(tmp_path / name)] for name in ("whole", "split", "packed")]
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    assert losses[2] == pytest.approx(losses[0], rel=1e-5)
    _assert_same_weights(whole, split)
    _assert_same_weights(whole, packed)


def test_resumed_run_matches_an_uninterrupted_one(tmp_path: Path) -> None:
    # batch_size 3 of 4 examples: batches cross epoch ends, so the cursor is really tested.
    straight = train(_config(tmp_path, "a", batch_size=3, micro_batch_size=3))
    first = RunConfig(output_dir=str(tmp_path / "b"), max_steps=2, save_every=2, progress_bar=False)
    train(_config(tmp_path, "b", batch_size=3, micro_batch_size=3, run=first))
    resumed = train(
        _config(
            tmp_path,
            "b",
            batch_size=3,
            micro_batch_size=3,
            run=dataclasses.replace(first, max_steps=4, resume="latest"),
        )
    )
    a, b = _metrics(tmp_path / "a"), _metrics(tmp_path / "b")
    assert [row["step"] for row in b] == [1, 2, 3, 4]
    for row_a, row_b in zip(a, b, strict=True):
        assert row_a["loss"] == pytest.approx(row_b["loss"], abs=1e-6)
        assert row_a["epoch"] == row_b["epoch"]
    _assert_same_weights(straight, resumed)


def test_epochs_decide_the_number_of_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train(_config(tmp_path, batch_size=3, micro_batch_size=3, epochs=2.0))  # and run.max_steps=4
    rows = _metrics(tmp_path / "run")
    assert [row["step"] for row in rows] == [1, 2, 3]  # ceil(2 * 4 / 3)
    assert [row["epoch"] for row in rows] == pytest.approx([0.75, 1.5, 2.25])
    # The max_steps given beside epochs (a flag over a config file setting epochs) is said unused.
    assert (
        "epochs=2 decides the run's length, 3 steps; run.max_steps=4 is not used" in capsys.readouterr().out
    )


def test_min_reward_keeps_the_rewarded_trajectories(tmp_path: Path) -> None:
    trajectories = [
        {"token_ids": [5, 6, 7, 8, 9], "mask": [0, 0, 1, 1, 1], "total_reward": reward}
        for reward in (0.0, 1.0)
    ]
    config = _config(
        tmp_path,
        data=_data(tmp_path, trajectories, "trajectories.jsonl"),
        min_reward=1.0,
        batch_size=1,
        micro_batch_size=1,
    )
    train(dataclasses.replace(config, run=dataclasses.replace(config.run, max_steps=1)))
    assert _metrics(tmp_path / "run")[0]["tokens"] == 3.0  # one trajectory, three generated tokens
    with pytest.raises(ValueError, match="no example"):
        train(dataclasses.replace(config, min_reward=2.0))


def test_sampler_visits_every_example_once_per_epoch_and_resumes_from_its_cursor() -> None:
    sampler = EpochSampler(5, 3, seed=7)
    stream = [i for _ in range(10) for i in sampler.next_batch()]  # six epochs
    for epoch in range(6):
        assert sorted(stream[epoch * 5 : (epoch + 1) * 5]) == list(range(5))
    assert stream[:5] != stream[5:10] or stream[5:10] != stream[10:15]  # shuffled per epoch
    assert sampler.epoch == 6.0
    resumed = EpochSampler(5, 3, seed=7)
    resumed.cursor = 9
    assert resumed.next_batch() == stream[9:12]
    assert [i for _ in range(2) for i in EpochSampler(4, 2, seed=0, shuffle=False).next_batch()] == [
        0,
        1,
        0,
        1,
    ]
    assert (
        EpochSampler(5, 3, seed=8).next_batch() != stream[:3]
        or EpochSampler(5, 3, seed=9).next_batch() != stream[:3]
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"data": ""}, "data must name a JSONL file"),
        ({"max_length": 1}, "max_length must be at least 2"),
        ({"batch_size": 0}, "must be at least 1"),
        ({"micro_batch_size": 8}, "larger than batch_size"),
        ({"epochs": 0.0}, "epochs must be a finite number > 0"),
        ({"dist": DistributedConfig(gradient_accumulation_steps=2)}, "gradient_accumulation_steps at 1"),
    ],
)
def test_contradictory_configs_are_refused(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **overrides)


def test_packed_examples_longer_than_a_row_are_cut_to_max_length(tmp_path: Path) -> None:
    long = [{"prompt": "x " * 5, "completion": "y " * 40}]
    config = _config(
        tmp_path,
        data=_data(tmp_path, long, "long.jsonl"),
        packing=True,
        max_length=32,
        batch_size=1,
        micro_batch_size=1,
    )
    train(dataclasses.replace(config, run=dataclasses.replace(config.run, max_steps=1)))
    assert _metrics(tmp_path / "run")[0]["tokens"] > 0


def test_yaml_config_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_file = tmp_path / "sft.yaml"
    config_file.write_text("data: d.jsonl\nbatch_size: 16\npacking: true\nrun: {max_steps: 3}\n")
    config = load_config(SFTConfig, config_file)
    assert (config.data, config.batch_size, config.packing, config.run.max_steps) == ("d.jsonl", 16, True, 3)
    config_file.write_text("batch_size: 16\n")
    with pytest.raises(ConfigError, match="data"):
        load_config(SFTConfig, config_file)

    seen: list[SFTConfig] = []
    monkeypatch.setattr("mrlm.train.cli.COMMANDS", _capturing_commands(seen))
    config_file.write_text("data: d.jsonl\nbatch_size: 16\nmicro_batch_size: 4\n")
    assert main(["sft", "--config", str(config_file), "--batch-size", "8"]) == 0
    assert (seen[0].data, seen[0].batch_size, seen[0].micro_batch_size) == ("d.jsonl", 8, 4)


def test_command_line_trains_and_says_where_the_model_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sft", "--data", _data(tmp_path), "--batch-size", "2", "--micro-batch-size", "2"]
    argv += ["--run.output-dir", str(tmp_path / "cli"), "--run.max-steps", "2", "--run.no-progress-bar"]
    assert main(argv) == 0
    assert f"final model: {tmp_path / 'cli' / 'final'}" in capsys.readouterr().out


def test_example_config_trains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(SFTConfig, ROOT / "examples" / "sft_chat.yaml")
    monkeypatch.chdir(ROOT)  # the example names its data relative to the repository root
    run = dataclasses.replace(config.run, output_dir=str(tmp_path / "run"), progress_bar=False)
    train(dataclasses.replace(config, epochs=None, run=dataclasses.replace(run, max_steps=2)))
    assert len(_metrics(tmp_path / "run")) == 2


def _capturing_commands(seen: list[SFTConfig]) -> tuple[object, ...]:
    from mrlm.train import commands

    def capture(config: SFTConfig) -> int:
        seen.append(config)
        return 0

    return tuple(dataclasses.replace(c, run=capture) if c.name == "sft" else c for c in commands.COMMANDS)
