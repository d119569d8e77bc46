"""The batch's token-level fields, row selection, and records written before multi-agent fields existed."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch

from mrlm.train.rollout import RolloutBatch, Trajectory, by_policy, collate, load_jsonl


def _row(
    agent: str | None, rewards: list[float], policy: str = "policy", episode: int | None = 0
) -> Trajectory:
    """A row with a 3-token prompt, then one 2-token reply per reward separated by 2 prompt tokens."""
    ids, mask, spans = [7, 7, 7], [0, 0, 0], []
    for turn in range(len(rewards)):
        if turn:
            ids += [8, 8]
            mask += [0, 0]
        spans.append((len(ids), len(ids) + 2))
        ids += [9, 9]
        mask += [1, 1]
    messages = [{"role": "user", "content": "go"}]
    for _ in rewards:
        messages += [{"role": "assistant", "content": "x"}]
    return Trajectory(
        env_id="test",
        seed=1,
        group=0,
        messages=messages,
        token_ids=ids,
        mask=mask,
        logprobs=[-0.5 * m for m in mask],
        turn_rewards=rewards,
        agent=agent,
        policy=policy,
        episode=episode,
        turn_spans=spans,
    )


ROWS = [_row("a", [1.0, 2.0]), _row("b", [0.5], policy="other"), _row(None, [0.25, -1.0, 3.0], episode=None)]


def test_token_rewards_sit_on_each_turn_s_last_token() -> None:
    batch = collate(ROWS, pad_token_id=0)
    assert batch.token_rewards is not None
    assert batch.token_rewards[0].tolist() == [0, 0, 0, 0, 1.0, 0, 0, 0, 2.0, 0, 0, 0, 0]
    torch.testing.assert_close(batch.token_rewards.sum(dim=1), batch.rewards)
    assert batch.turn_spans[2] == [(3, 5), (7, 9), (11, 13)]
    assert batch.agents == ["a", "b", None] and batch.policies == ["policy", "other", "policy"]
    assert batch.episodes is not None and batch.episodes.tolist() == [0, 0, -1]
    assert batch.ref_logprobs is not None and batch.values is not None
    assert batch.ref_logprobs.shape == batch.input_ids.shape and bool(batch.values.isnan().all())


@pytest.mark.parametrize(
    "rows",
    [slice(1, 3), torch.tensor([2, 0]), torch.tensor([True, False, True]), [1]],
    ids=["slice", "indices", "bool-mask", "list"],
)
def test_select_cuts_every_field_alike(rows: slice | torch.Tensor | list[int]) -> None:
    batch = collate(ROWS, pad_token_id=0)
    picked = batch.select(rows)
    index = torch.arange(3)[rows] if isinstance(rows, slice) else torch.as_tensor(rows)
    index = index.nonzero().flatten() if index.dtype == torch.bool else index
    for field in dataclasses.fields(batch):
        value, got = getattr(batch, field.name), getattr(picked, field.name)
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(got, value[index], equal_nan=True)
        else:
            assert got == [value[i] for i in index.tolist()]
    assert len(picked) == len(index)


def test_the_trainer_s_field_by_field_slicing_still_works() -> None:
    batch = collate(ROWS, pad_token_id=0)
    rows = slice(0, 2)
    micro = RolloutBatch(*(getattr(batch, f.name)[rows] for f in dataclasses.fields(batch)))
    assert micro.agents == ["a", "b"] and micro.input_ids.shape[0] == 2
    # A batch built with the six original fields still works, and selects.
    old = RolloutBatch(
        batch.input_ids, batch.attention_mask, batch.mask, batch.old_logprobs, batch.rewards, batch.groups
    )
    assert old.select(rows).token_rewards is None and old.select(rows).agents == []


def test_replace_fills_a_field_checking_its_rows() -> None:
    batch = collate(ROWS, pad_token_id=0)
    filled = batch.replace(ref_logprobs=torch.zeros_like(batch.old_logprobs))
    assert filled.ref_logprobs is not None and not bool(filled.ref_logprobs.isnan().any())
    with pytest.raises(ValueError, match="has 2 rows; the batch has 3"):
        batch.replace(values=torch.zeros(2, 13))


def test_by_policy_keeps_order() -> None:
    assert {name: [t.agent for t in rows] for name, rows in by_policy(ROWS).items()} == {
        "policy": ["a", None],
        "other": ["b"],
    }


def test_records_written_before_the_multi_agent_fields_load(tmp_path: Path) -> None:
    old = {
        "env_id": "mrlm/Math-v0",
        "seed": 3,
        "group": 1,
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "token_ids": [1, 2, 3, 4],
        "mask": [0, 0, 1, 1],
        "logprobs": [0.0, 0.0, -0.1, -0.2],
        "turn_rewards": [1.0],
        "finish_reasons": ["stop"],
        "infos": [{}],
        "reset_info": {},
        "final_observation": None,
        "terminated": True,
        "truncated": False,
        "truncation": None,
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(old) + "\n")
    (loaded,) = load_jsonl(path)
    assert (loaded.agent, loaded.policy, loaded.episode, loaded.sample) == (None, "policy", None, None)
    assert loaded.turn_spans == [(2, 4)]  # derived from the mask
    batch = collate([loaded], pad_token_id=0)
    assert batch.token_rewards is not None and batch.token_rewards[0].tolist() == [0, 0, 0, 1.0]


def test_spans_that_do_not_match_the_turns_keep_the_total() -> None:
    # An old record whose second reply was empty: one run in the mask, two turns.
    row = dataclasses.replace(_row(None, [1.0]), turn_rewards=[1.0, 2.0], turn_spans=[])
    batch = collate([row], pad_token_id=0)
    assert batch.token_rewards is not None and batch.token_rewards[0].tolist() == [0, 0, 0, 0, 3.0]
    with pytest.raises(ValueError, match="outside"):
        dataclasses.replace(row, turn_spans=[(3, 9)])
    assert math.isclose(float(batch.rewards[0]), 3.0)
