"""Trajectory records, their JSONL round trip, and collation into tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from mrlm.train.rollout import Trajectory, collate, load_jsonl, save_jsonl


def _trajectory(**overrides: object) -> Trajectory:
    fields: dict[str, object] = {
        "env_id": "mrlm/Math-v0",
        "seed": 3,
        "group": 1,
        "messages": [
            {"role": "system", "content": "Be precise."},
            {"role": "user", "content": "1/3 as a decimal? é ∑ 🙂"},
            {"role": "assistant", "content": "0.333…"},
        ],
        "token_ids": [1, 10, 11, 2, 1, 12, 13, 2],
        "mask": [0, 0, 0, 0, 0, 1, 1, 1],
        "logprobs": [0.0, 0.0, 0.0, 0.0, 0.0, -0.1, -1e-300, -123.456789012345678],
        "turn_rewards": [0.1 + 0.2],
        "finish_reasons": ["stop"],
        "infos": [{"correct": False, "extracted_answer": None, "nested": {"k": [1, 2.5]}}],
        "reset_info": {"system_prompt": "Be precise.", "level": 2},
        "final_observation": "That answer is not correct.",
        "terminated": True,
    }
    fields.update(overrides)
    return Trajectory(**fields)  # type: ignore[arg-type]


def test_jsonl_round_trip_is_exact(tmp_path: Path) -> None:
    originals = [
        _trajectory(),
        _trajectory(group=2, seed=None, truncated=True, truncation="max_turns", terminated=False),
    ]
    path = save_jsonl(tmp_path / "rollouts.jsonl", originals)
    assert load_jsonl(path) == originals
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2


def test_numpy_values_in_infos_are_written_as_numbers(tmp_path: Path) -> None:
    trajectory = _trajectory(infos=[{"score": np.float32(0.5), "count": np.int64(3), "v": np.arange(2)}])
    (loaded,) = load_jsonl(save_jsonl(tmp_path / "r.jsonl", [trajectory]))
    assert loaded.infos == [{"score": 0.5, "count": 3, "v": [0, 1]}]


def test_unserialisable_infos_fail_loudly(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="object"):
        save_jsonl(tmp_path / "r.jsonl", [_trajectory(infos=[{"x": object()}])])


def test_properties_and_validation() -> None:
    trajectory = _trajectory(turn_rewards=[1.0, 0.5])
    assert trajectory.total_reward == 1.5
    assert trajectory.num_turns == 2
    assert trajectory.num_generated_tokens == 3
    with pytest.raises(ValueError, match="differ in length"):
        _trajectory(mask=[0, 1])


def test_collate_right_pads() -> None:
    short = _trajectory(token_ids=[1, 5, 2], mask=[0, 1, 1], logprobs=[0.0, -0.5, -0.25], group=4)
    batch = collate([_trajectory(), short], pad_token_id=0)
    assert batch.input_ids.shape == (2, 8)
    assert batch.input_ids[1].tolist() == [1, 5, 2, 0, 0, 0, 0, 0]
    assert batch.attention_mask[1].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert batch.mask[1].tolist() == [0, 1, 1, 0, 0, 0, 0, 0]
    assert batch.old_logprobs.dtype == torch.float32 and batch.old_logprobs[1, 1].item() == -0.5
    torch.testing.assert_close(batch.rewards, torch.tensor([0.3, 0.3]))
    assert batch.groups.tolist() == [1, 4]
