"""DPO: training moves the policy toward the chosen replies; micro-batching, the reference modes and
resuming give the updates they should; bad data and contradictory settings are named in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mrlm.train.algorithms.dpo import METRICS, DPOConfig, train
from mrlm.train.cli import main
from mrlm.train.dpo import PreferenceDataError, collate_pairs, load_preference_pairs
from mrlm.train.generation.logprobs import token_logprobs
from mrlm.train.loop import OptimConfig, RunConfig
from mrlm.train.policy import ModelConfig, load_policy

RECORDS: list[dict[str, Any]] = [
    {"prompt": "What is 2+2?", "chosen": " 4", "rejected": " 5"},
    {"prompt": "Capital of France?", "chosen": " Paris", "rejected": " Rome"},
    {
        "prompt": [{"role": "user", "content": "Name a colour."}],
        "chosen": [{"role": "assistant", "content": "Blue."}],
        "rejected": [{"role": "assistant", "content": "Seven."}],
    },
    {"chosen": "Count: 1 2 3", "rejected": "Count: 3 2 1"},  # implicit prompt
]


def _data(tmp_path: Path, records: list[dict[str, Any]] = RECORDS, name: str = "prefs.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


def _config(tmp_path: Path, name: str = "run", **overrides: Any) -> DPOConfig:
    base: dict[str, Any] = {
        "data": _data(tmp_path),
        "batch_size": 4,
        "micro_batch_size": 2,
        "max_length": 64,
        "beta": 0.5,
        "run": RunConfig(output_dir=str(tmp_path / name), max_steps=4, progress_bar=False),
        "optim": OptimConfig(learning_rate=3e-3),
    }
    base.update(overrides)
    return DPOConfig(**base)


def _metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _weights(final: Path) -> dict[str, torch.Tensor]:
    return AutoModelForCausalLM.from_pretrained(final).state_dict()


def _assert_same_weights(a: Path, b: Path, rel: float = 1e-3) -> None:
    """Every weight of ``a`` equals ``b``'s within ``rel`` of how far training moved it (Adam turns
    float-level differences of tiny gradients into visible ones, but never into a different update)."""
    first, second = _weights(a), _weights(b)
    initial = load_policy(ModelConfig(name_or_path="tiny"))[0].state_dict()
    for name in first:
        moved = (first[name] - initial[name]).abs().max()
        assert (first[name] - second[name]).abs().max() <= rel * moved + 1e-7, name


def _margins(model_dir: str | Path) -> torch.Tensor:
    """Per pair, log p(chosen) - log p(rejected) under the saved model, computed here independently."""
    model = (
        AutoModelForCausalLM.from_pretrained(model_dir)
        if model_dir != "tiny"
        else load_policy(ModelConfig(name_or_path="tiny"))[0]
    )
    tokenizer = (
        AutoTokenizer.from_pretrained(model_dir)
        if model_dir != "tiny"
        else load_policy(ModelConfig(name_or_path="tiny"))[1]
    )
    pairs, _ = load_preference_pairs(RECORDS, tokenizer, max_length=64)
    batch = collate_pairs(pairs, tokenizer.pad_token_id)
    with torch.no_grad():
        logps = token_logprobs(model, batch.input_ids, batch.attention_mask, batch.completion_mask).sum(1)
    chosen, rejected = logps.chunk(2)
    return chosen - rejected


def test_training_prefers_the_chosen_replies(tmp_path: Path) -> None:
    final = train(
        _config(tmp_path, run=RunConfig(output_dir=str(tmp_path / "run"), max_steps=6, progress_bar=False))
    )
    rows = _metrics(tmp_path / "run")
    assert set(METRICS) <= set(rows[0]) | {"epoch"}
    # Step 1 scores the initial policy against itself: every implicit reward is 0.
    assert rows[0]["rewards/margins"] == 0.0 and rows[0]["loss"] == pytest.approx(0.6931472, rel=1e-6)
    assert rows[-1]["rewards/margins"] > 0.5 and rows[-1]["rewards/accuracies"] == 1.0
    assert rows[-1]["loss"] < 0.5
    before, after = _margins("tiny"), _margins(final)
    assert bool((after > before + 0.5).all()), (before, after)


#: For comparing two runs' weights: a large epsilon keeps Adam from turning float-level differences
#: of near-zero gradients into full-size steps.
CALM = OptimConfig(learning_rate=3e-3, adam_eps=1e-3)


def test_micro_batches_do_not_change_the_update(tmp_path: Path) -> None:
    whole = train(_config(tmp_path, "whole", micro_batch_size=4, optim=CALM))
    split = train(_config(tmp_path, "split", micro_batch_size=1, optim=CALM))
    for a, b in zip(_metrics(tmp_path / "whole"), _metrics(tmp_path / "split"), strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["rewards/margins"] == pytest.approx(b["rewards/margins"], rel=1e-4, abs=1e-6)
    _assert_same_weights(whole, split)


def test_precomputed_reference_trains_as_the_reference_model(tmp_path: Path) -> None:
    """Scoring the pairs once with the initial policy, or giving those numbers in the records, is the
    same run as keeping the frozen initial policy beside it."""
    with_model = train(_config(tmp_path, "model", reference="model", optim=CALM))
    precomputed = train(_config(tmp_path, "pre", reference="precomputed", optim=CALM))
    model, tokenizer = load_policy(ModelConfig(name_or_path="tiny"))
    pairs, _ = load_preference_pairs(RECORDS, tokenizer, max_length=64)
    batch = collate_pairs(pairs, tokenizer.pad_token_id)
    with torch.no_grad():
        chosen, rejected = (
            token_logprobs(model, batch.input_ids, batch.attention_mask, batch.completion_mask)
            .sum(1)
            .chunk(2)
        )
    records = [
        {**r, "ref_chosen_logps": c, "ref_rejected_logps": j}
        for r, c, j in zip(RECORDS, chosen.tolist(), rejected.tolist(), strict=True)
    ]
    from_records = train(
        _config(
            tmp_path,
            "records",
            reference="precomputed",
            optim=CALM,
            data=_data(tmp_path, records, "with_ref.jsonl"),
        )
    )
    runs = [_metrics(tmp_path / name) for name in ("model", "pre", "records")]
    for rows in zip(*runs, strict=True):
        for key in ("loss", "rewards/chosen", "rewards/margins"):
            assert rows[1][key] == pytest.approx(rows[0][key], rel=1e-4, abs=1e-6)
            assert rows[2][key] == pytest.approx(rows[0][key], rel=1e-4, abs=1e-6)
    _assert_same_weights(with_model, precomputed)
    _assert_same_weights(with_model, from_records)


def test_reference_free_and_another_reference_model(tmp_path: Path, tokenizer: Any) -> None:
    from mrlm.train.tiny import build_tiny_model, save_tiny

    train(_config(tmp_path, "free", reference="none"))
    free = _metrics(tmp_path / "free")[0]
    # Without a reference the implicit reward is beta * log p itself.
    assert free["rewards/chosen"] == pytest.approx(0.5 * free["logps/chosen"], rel=1e-5)
    other = save_tiny(tmp_path / "other_model", build_tiny_model(tokenizer, seed=1), tokenizer)
    train(_config(tmp_path, "other", reference_model=str(other)))
    first = _metrics(tmp_path / "other")[0]
    assert first["rewards/margins"] != 0.0  # the reference is another model than the policy


def test_resumed_run_matches_an_uninterrupted_one(tmp_path: Path) -> None:
    # batch_size 3 of 4 pairs: batches cross epoch ends; the precomputed scores come from the checkpoint.
    straight = train(_config(tmp_path, "a", batch_size=3, micro_batch_size=3, reference="precomputed"))
    first = RunConfig(output_dir=str(tmp_path / "b"), max_steps=2, save_every=2, progress_bar=False)
    train(_config(tmp_path, "b", batch_size=3, micro_batch_size=3, reference="precomputed", run=first))
    resumed = train(
        _config(
            tmp_path,
            "b",
            batch_size=3,
            micro_batch_size=3,
            reference="precomputed",
            run=dataclasses.replace(first, max_steps=4, resume="latest"),
        )
    )
    a, b = _metrics(tmp_path / "a"), _metrics(tmp_path / "b")
    assert [row["step"] for row in b] == [1, 2, 3, 4]
    for row_a, row_b in zip(a, b, strict=True):
        assert row_a["loss"] == pytest.approx(row_b["loss"], rel=1e-6)
        assert row_a["rewards/margins"] == pytest.approx(row_b["rewards/margins"], rel=1e-6, abs=1e-9)
    _assert_same_weights(straight, resumed, rel=0.0)


def test_epochs_decide_the_number_of_steps(tmp_path: Path) -> None:
    train(_config(tmp_path, batch_size=3, micro_batch_size=3, epochs=2.0))
    assert [row["epoch"] for row in _metrics(tmp_path / "run")] == pytest.approx([0.75, 1.5, 2.25])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"beta": 0.0}, "beta must be a finite number > 0, got 0.0"),
        ({"beta": float("inf")}, "beta must be a finite number > 0, got inf"),
        ({"sft_weight": float("inf")}, "sft_weight must be a finite number >= 0, got inf"),
        ({"loss_type": "sigmoid", "label_smoothing": 0.1}, "label_smoothing applies to loss_type='robust'"),
        ({"loss_type": "robust", "label_smoothing": 0.5}, "robust needs 0 <= label_smoothing < 0.5"),
        ({"reference": "none", "reference_model": "x"}, "reference-free"),
        ({"micro_batch_size": 8}, "micro_batch_size"),
        ({"sft_weight": -1.0}, "sft_weight"),
        ({"sft_weight": float("nan")}, "sft_weight"),
    ],
)
def test_contradictory_configs_are_refused(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(tmp_path, **overrides)


def test_data_that_cannot_train_is_named(tmp_path: Path) -> None:
    with pytest.raises(PreferenceDataError, match="no data"):
        train(_config(tmp_path, data=""))
    half = [{**RECORDS[0], "ref_chosen_logps": -1.0, "ref_rejected_logps": -2.0}, RECORDS[1]]
    with pytest.raises(PreferenceDataError, match="1 of 2 pairs carry"):
        train(_config(tmp_path, data=_data(tmp_path, half, "half.jsonl")))
    full = [{**RECORDS[0], "ref_chosen_logps": -1.0, "ref_rejected_logps": -2.0}]
    with pytest.raises(PreferenceDataError, match="use reference='precomputed'"):
        train(_config(tmp_path, data=_data(tmp_path, full, "full.jsonl")))
    same = [{**record, "rejected": record["chosen"]} for record in RECORDS]
    with pytest.raises(PreferenceDataError, match=r"no preference pair is left.* 4 with identical replies"):
        train(_config(tmp_path, data=_data(tmp_path, same, "same.jsonl")))


def test_a_list_or_dataset_replaces_the_file(tmp_path: Path) -> None:
    from datasets import Dataset  # type: ignore[import-untyped]

    standard = [
        RECORDS[0],
        RECORDS[1],
        {"prompt": "Hi", "chosen": " hello", "rejected": " bye"},
    ]  # one Arrow type per column
    train(_config(tmp_path, "file", data=_data(tmp_path, standard, "standard.jsonl"), batch_size=3))
    train(_config(tmp_path, "list", data="", batch_size=3), data=Dataset.from_list(standard))
    for a, b in zip(_metrics(tmp_path / "file"), _metrics(tmp_path / "list"), strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)


def test_command_line_and_train_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _data(tmp_path)
    args = [
        "--data",
        data,
        "--batch-size",
        "4",
        "--micro-batch-size",
        "2",
        "--run.max-steps",
        "2",
        "--run.no-progress-bar",
    ]
    assert main(["dpo", *args, "--run.output-dir", str(tmp_path / "cli")]) == 0
    assert "final model:" in capsys.readouterr().out
    config = tmp_path / "run.yaml"
    config.write_text(
        f"algorithm: dpo\ndata: {data}\nloss_type: ipo\nbatch_size: 4\nrun: {{max_steps: 1, progress_bar: false}}\n"
    )
    assert main(["train", "--config", str(config), "--output", str(tmp_path / "file")]) == 0
    assert [row["step"] for row in _metrics(tmp_path / "file")] == [1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": "a", "chosen": " b"}) + "\n")
    assert main(["dpo", "--data", str(bad), "--run.output-dir", str(tmp_path / "bad")]) == 1
    assert "PreferenceDataError: record 0: missing field 'rejected'" in capsys.readouterr().err


def test_every_metric_is_in_the_guide() -> None:
    text = (Path(__file__).parents[3] / "docs" / "dpo.md").read_text()
    for key in METRICS:
        assert f"| `{key}` |" in text, key


def test_plot_draws_dpo_metrics(tmp_path: Path) -> None:
    train(_config(tmp_path, run=RunConfig(output_dir=str(tmp_path / "run"), max_steps=2, progress_bar=False)))
    out = tmp_path / "margins.png"
    assert (
        main(["plot", str(tmp_path / "run"), "--keys", "rewards/margins", "loss", "--output", str(out)]) == 0
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_lora_policy_is_its_own_reference_with_the_adapters_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No second model is loaded; the run equals one scored once by the policy at its start (the
    adapters start at zero, so both references are the base model)."""
    lora = ModelConfig(name_or_path="tiny", lora_r=4)
    precomputed = train(_config(tmp_path, "pre", model=lora, reference="precomputed", optim=CALM))

    def no_copy(config: Any) -> Any:
        raise AssertionError("a LoRA policy's reference must not be a second model")

    monkeypatch.setattr("mrlm.train.algorithms.dpo.load_reference", no_copy)
    adapters_off = train(_config(tmp_path, "off", model=lora, reference="model", optim=CALM))
    pre, off = _metrics(tmp_path / "pre"), _metrics(tmp_path / "off")
    assert off[0]["rewards/margins"] == 0.0 and off[-1]["rewards/margins"] > 0.1
    for a, b in zip(pre, off, strict=True):
        for key in ("loss", "rewards/chosen", "rewards/margins", "grad_norm"):
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
    assert (precomputed / "adapter_config.json").is_file() and (
        adapters_off / "adapter_config.json"
    ).is_file()
