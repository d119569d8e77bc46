"""The single-agent (Gymnasium) built-in envs still roll out with the tiny model, in both joint modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.rollout import RolloutEngine, collate, load_jsonl, save_jsonl

ENVS: dict[str, dict[str, Any]] = {
    "mrlm/Math-v0": {"level": 1, "max_turns": 2},
    "mrlm/Code-v0": {"max_turns": 1},
    "mrlm/ToolUse-v0": {"max_turns": 2},
}


@pytest.mark.parametrize("joint", ["align", "cross"])
@pytest.mark.parametrize("env_id", list(ENVS))
def test_single_agent_env_rolls_out(
    env_id: str, joint: str, lively_model: Any, tokenizer: Any, tmp_path: Path
) -> None:
    engine = RolloutEngine(
        env_id,
        HFGenerator(lively_model, tokenizer),
        tokenizer,
        SamplingParams(max_new_tokens=16, seed=1),
        env_kwargs=ENVS[env_id],
        joint=joint,  # type: ignore[arg-type]
    )
    with engine:
        rows = engine.collect([0, 1], group_size=2)
    assert len(rows) >= 4 and len(rows) % 2 == 0
    for first, second in zip(rows[::2], rows[1::2], strict=True):
        assert first.group == second.group and first.messages[:2] == second.messages[:2]
        assert (first.sample, second.sample) == (0, 1)
    assert all(t.agent is None and t.policy == "policy" and t.env_id == env_id for t in rows)
    assert all(len(t.turn_spans) == t.num_turns >= 1 for t in rows)
    # A single agent gets no role line: the env's system prompt alone.
    assert rows[0].messages[0]["role"] == "system" and "You are None" not in rows[0].messages[0]["content"]
    assert load_jsonl(save_jsonl(tmp_path / "rows.jsonl", rows)) == rows
    batch = collate(rows, tokenizer.pad_token_id)
    assert batch.token_rewards is not None
    torch.testing.assert_close(batch.token_rewards.sum(dim=1), batch.rewards)
