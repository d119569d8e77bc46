"""GRPO step timings in metrics.jsonl and replies forced to full length (``ignore_stop``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from mrlm.train.algorithms.grpo import GRPOConfig, train
from mrlm.train.generation import Completion, HFGenerator, SamplingParams
from mrlm.train.loop import OptimConfig, RunConfig


def test_metrics_time_the_step_and_ignore_stop_fills_every_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[SamplingParams] = []
    generate = HFGenerator.generate

    def recording(
        self: HFGenerator, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Completion]:
        seen.append(params)
        return generate(self, prompts, params)

    monkeypatch.setattr(HFGenerator, "generate", recording)
    config = GRPOConfig(
        env_kwargs='{"level": 1}',
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=5,
        micro_batch_size=4,
        ignore_stop=True,
        run=RunConfig(output_dir=str(tmp_path), max_steps=2, progress_bar=False),
        optim=OptimConfig(learning_rate=1e-3),
    )
    train(config)
    assert len(seen) == 2 and all(params.ignore_stop for params in seen)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert 0 < row["rollout_s"] < row["step_s"]
        # tokens_per_s is the generated tokens over the step time: 4 replies of exactly 5 tokens.
        assert round(row["tokens_per_s"] * row["step_s"]) == 4 * 5
