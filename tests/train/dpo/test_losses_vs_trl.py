"""Each preference loss equals TRL's ``DPOTrainer`` loss of the same name on identical inputs.

TRL's trainer is built on a tiny model and a reference that differs from it, and scores one batch
from its own data pipeline; MRLM's log-probs and loss are computed on that same batch.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from mrlm.train.algorithms.dpo import PreferenceSettings, dpo_loss, sequence_logps
from mrlm.train.dpo import PairBatch, collate_pairs, load_preference_pairs

RECORDS = [
    {"prompt": "What is 2+2?", "chosen": " 4", "rejected": " 5 or so"},
    {"prompt": "Say hi", "chosen": " hi there", "rejected": " no"},
    {"prompt": "Name a colour:", "chosen": " blue", "rejected": " the sky at noon"},
]

# (MRLM settings, TRL loss_type): TRL's "sigmoid_norm" is the sigmoid loss on per-token log-ratios.
CASES = [
    ({"loss_type": "sigmoid"}, "sigmoid"),
    ({"loss_type": "hinge"}, "hinge"),
    ({"loss_type": "ipo"}, "ipo"),
    ({"loss_type": "robust", "label_smoothing": 0.2}, "robust"),
    ({"loss_type": "sigmoid", "length_normalize": True}, "sigmoid_norm"),
]


@pytest.fixture(scope="module")
def models(tokenizer: Any) -> tuple[Any, Any]:
    from mrlm.train.tiny import build_tiny_model

    torch.manual_seed(0)
    policy, reference = build_tiny_model(tokenizer), build_tiny_model(tokenizer)
    with torch.no_grad():  # a reference unlike the policy, so the log-ratios are not zero
        for parameter in reference.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    return policy, reference


def _trl_trainer(
    tokenizer: Any, policy: Any, reference: Any, loss_type: str, tmp_path: Any, **extra: Any
) -> Any:
    from datasets import Dataset  # type: ignore[import-untyped]
    from trl import DPOConfig, DPOTrainer

    args = DPOConfig(
        output_dir=str(tmp_path),
        loss_type=[loss_type],
        beta=0.3,
        report_to=[],
        per_device_train_batch_size=len(RECORDS),
        use_cpu=True,
        max_length=64,
        bf16=False,  # TRL's default computes in bfloat16; the comparison is in float32
        **extra,
    )
    return DPOTrainer(
        model=policy,
        ref_model=reference,
        args=args,
        train_dataset=Dataset.from_list(RECORDS),
        processing_class=tokenizer,
    )


def _trl_batch(trainer: Any) -> dict[str, torch.Tensor]:
    """TRL's collated batch of every record, in the records' order."""
    return trainer.data_collator([trainer.train_dataset[i] for i in range(len(RECORDS))])


@pytest.mark.slow
@pytest.mark.parametrize(("settings", "trl_loss"), CASES, ids=[case[1] for case in CASES])
def test_loss_equals_trl(
    settings: dict[str, Any], trl_loss: str, tokenizer: Any, models: Any, tmp_path: Any
) -> None:
    policy, reference = models
    extra = {"label_smoothing": settings["label_smoothing"]} if "label_smoothing" in settings else {}
    trainer = _trl_trainer(tokenizer, policy, reference, trl_loss, tmp_path, **extra)
    inputs = _trl_batch(trainer)
    trainer.model.train()
    expected = trainer.compute_loss(trainer.model, inputs)
    metrics = {name: values[-1] for name, values in trainer._metrics["train"].items()}

    batch = PairBatch(inputs["input_ids"], inputs["attention_mask"], inputs["completion_mask"], None)
    config = PreferenceSettings(beta=0.3, **settings)
    with torch.no_grad():
        ref = sequence_logps(reference, batch)
    loss_sum, sums = dpo_loss(sequence_logps(policy, batch), ref, batch.lengths, config)
    pairs = batch.num_pairs
    # Both sum float32 log-probs by different kernels (TRL's fused head): equal up to float error.
    assert float(loss_sum) / pairs == pytest.approx(float(expected), rel=1e-5)
    for name in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"):
        assert sums[name] / pairs == pytest.approx(metrics[name], rel=1e-5, abs=1e-6), name
    # The loss is not degenerate: the reference differs, so the margins are not all zero.
    assert abs(sums["rewards/margins"]) > 1e-4


@pytest.mark.slow
def test_tokenization_matches_trl(tokenizer: Any, models: Any, tmp_path: Any) -> None:
    """Standard records become the same token rows and completion masks as TRL's pipeline makes."""
    policy, reference = models
    inputs = _trl_batch(_trl_trainer(tokenizer, policy, reference, "sigmoid", tmp_path))
    pairs, report = load_preference_pairs(RECORDS, tokenizer, max_length=64)
    assert report.kept == len(RECORDS)
    ours = collate_pairs(pairs, tokenizer.pad_token_id)
    width = int(inputs["attention_mask"].sum(dim=1).max())
    assert torch.equal(ours.attention_mask[:, :width], inputs["attention_mask"][:, :width])
    real = ours.attention_mask.bool()
    assert torch.equal(ours.input_ids[real], inputs["input_ids"][real])
    assert torch.equal(ours.completion_mask[real], inputs["completion_mask"][real])
