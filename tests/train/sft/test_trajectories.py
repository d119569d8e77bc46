"""Behavioural cloning and world modelling on trajectories, without re-tokenizing."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from mrlm.train.sft import (
    SFTDataError,
    Target,
    chat_example,
    load_sft_examples,
    select_by_reward,
    trajectory_example,
    trajectory_record,
)
from mrlm.train.sft.trajectories import TrajectoryRecord
from tests.train.sft.builders import FIRST, SYSTEM, guessing_trajectory, make_trajectory, target_texts


def test_behavioural_cloning_keeps_the_sampled_tokens(tokenizer: Any) -> None:
    # "Is it 5?" sampled one byte-token at a time: not how the tokenizer would encode the text.
    odd = [tokenizer.convert_tokens_to_ids(c) for c in ["I", "s", "Ġ", "i", "t"]] + [2]
    assert odd[:-1] != tokenizer.encode("Is it")
    trajectory = make_trajectory(tokenizer, [(odd, "Too high."), ([*tokenizer.encode("3"), 2], None)])
    example = trajectory_example(trajectory_record(trajectory, 0))
    assert example.input_ids == trajectory.token_ids and example.labels_mask == trajectory.mask
    assert target_texts(tokenizer, example) == ["Is it<|im_end|>", "3<|im_end|>"]


def test_world_model_targets_are_the_environment_turns(tokenizer: Any) -> None:
    record = trajectory_record(guessing_trajectory(tokenizer), 0)
    assert target_texts(tokenizer, trajectory_example(record, "environment")) == [
        "\n<|im_start|>user\nToo high.<|im_end|>\n<|im_start|>assistant\n",
        "\n<|im_start|>user\nToo low. é 🙂<|im_end|>\n<|im_start|>assistant\n",
    ]
    both = trajectory_example(record, "both")
    assert both.labels_mask == [
        a | e
        for a, e in zip(
            trajectory_example(record).labels_mask,
            trajectory_example(record, "environment").labels_mask,
            strict=True,
        )
    ]
    # The opening prompt is never a target: it ends where the template's generation prompt does.
    opening = tokenizer.apply_chat_template([SYSTEM, FIRST], add_generation_prompt=True, return_dict=True)
    n = len(opening["input_ids"])
    assert record.token_ids[:n] == list(opening["input_ids"])
    assert not any(both.labels_mask[:n]) and both.labels_mask[n] == 1


@pytest.mark.parametrize("target", ["assistant", "environment", "both"])
def test_trajectory_and_its_messages_give_the_same_targets(tokenizer: Any, target: Target) -> None:
    trajectory = guessing_trajectory(tokenizer)
    from_tokens = trajectory_example(trajectory_record(trajectory, 0), target)
    from_messages = chat_example(tokenizer, trajectory.messages, target=target)
    # The rendering also holds the newline after the last reply, which no target covers.
    n = len(from_tokens)
    assert from_messages.input_ids[:n] == from_tokens.input_ids
    assert from_messages.labels_mask == [*from_tokens.labels_mask, 0]


def test_a_trajectory_dict_and_jsonl_load_like_the_trajectory(tokenizer: Any, tmp_path: Any) -> None:
    from mrlm.train.rollout import save_jsonl

    trajectory = guessing_trajectory(tokenizer, rewards=[0.0, 0.0, 1.0])
    path = save_jsonl(tmp_path / "t.jsonl", [trajectory])
    (from_file,), report = load_sft_examples(path, tokenizer, target="both")
    (from_object,), _ = load_sft_examples([trajectory], tokenizer, target="both")
    minimal = {"token_ids": trajectory.token_ids, "mask": trajectory.mask}
    (from_dict,), _ = load_sft_examples([minimal], tokenizer, target="both")
    assert from_file == from_object == from_dict
    assert report.formats == {"trajectory": 1} and report.kept == 1


def _record(reward: float | None, group: int | None = 0) -> TrajectoryRecord:
    return TrajectoryRecord([1, 2, 3], [0, 1, 1], reward, None if group is None else ("env", 0, group))


def test_min_reward_keeps_at_or_above_the_threshold() -> None:
    records = [_record(r) for r in (0.0, 0.5, 1.0, -1.0)]
    assert select_by_reward(records, min_reward=0.5) == [False, True, True, False]
    assert select_by_reward(records) == [True] * 4


def test_top_fraction_ranks_within_each_group_and_breaks_ties_by_order() -> None:
    records = [
        _record(0.2, group=0),
        _record(0.9, group=0),
        _record(0.2, group=0),
        _record(0.5, group=1),
        _record(0.5, group=1),
    ]
    # ceil(0.5 * 3) = 2 of group 0, ceil(0.5 * 2) = 1 of group 1.
    assert select_by_reward(records, top_fraction=0.5) == [True, True, False, True, False]
    # Both filters: the best half of each group, and at least 0.5.
    assert select_by_reward(records, top_fraction=0.5, min_reward=0.5) == [False, True, False, True, False]


def test_reward_filters_through_load_and_count_what_they_remove(tokenizer: Any) -> None:
    trajectories = [
        guessing_trajectory(tokenizer, rewards=[0.0, 0.0, r], group=g)
        for g, r in [(0, 1.0), (0, 0.0), (1, 0.3), (1, 0.8)]
    ]
    chat = {"messages": trajectories[0].messages}  # no reward: passes the filter
    examples, report = load_sft_examples([*trajectories, chat], tokenizer, min_reward=0.5)
    assert len(examples) == 3 and report.filtered_by_reward == 2 and report.kept == 3
    assert examples[0].input_ids == trajectories[0].token_ids
    assert examples[1].input_ids == trajectories[3].token_ids
    _, report = load_sft_examples(trajectories, tokenizer, top_fraction=0.5)
    assert report.filtered_by_reward == 2


def test_reward_filters_need_rewards_and_groups() -> None:
    with pytest.raises(ValueError, match="record 1 \\(trajectory\\): reward filtering needs 'turn_rewards'"):
        select_by_reward([_record(1.0), _record(None)], min_reward=0.0)
    with pytest.raises(ValueError, match="record 7 \\(trajectory\\): top_fraction needs its 'group'"):
        select_by_reward([_record(1.0, group=None)], top_fraction=0.5, indices=[7])
    with pytest.raises(ValueError, match="top_fraction must be in"):
        select_by_reward([_record(1.0)], top_fraction=0.0)


def test_trajectory_record_validates_fields(tokenizer: Any) -> None:
    trajectory = guessing_trajectory(tokenizer)
    with pytest.raises(ValueError, match="record 3 \\(trajectory\\): missing field\\(s\\) 'mask'"):
        trajectory_record({"token_ids": [1, 2]}, 3)
    with pytest.raises(ValueError, match="record 0 \\(trajectory\\): token_ids and mask differ in length"):
        trajectory_record({"token_ids": [1, 2], "mask": [0]}, 0)
    with pytest.raises(ValueError, match=re.escape("record 0 (trajectory): mask[1] must be 0 or 1, got 2")):
        trajectory_record({"token_ids": [1, 2], "mask": [0, 2]}, 0)
    record = trajectory_record({**dataclasses.asdict(trajectory), "turn_rewards": [1.0, 2.0]}, 0)
    assert record.reward == 3.0 and record.group == ("guess", 0, 0)
    assert trajectory_record({"token_ids": [1], "mask": [0], "total_reward": 0.5}, 0).reward == 0.5


_GOOD = {"token_ids": [1, 2, 3], "mask": [0, 1, 1]}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"token_ids": 5, "mask": 1}, "'token_ids' must be a list, got 5"),
        ({"token_ids": [1, 2, None]}, "token_ids[2] must be an integer, got None"),
        ({"token_ids": [1, 2, "a"]}, "token_ids[2] must be an integer, got 'a'"),
        ({"token_ids": [1, 2, 3.0]}, "token_ids[2] must be an integer, got 3.0"),
        ({"token_ids": [1, True, 3]}, "token_ids[1] must be an integer, got True"),
        ({"mask": "011"}, "'mask' must be a list, got '011'"),
        ({"mask": [0, 1, 1.0]}, "mask[2] must be 0 or 1, got 1.0"),
        ({"mask": [0, None, 1]}, "mask[1] must be 0 or 1, got None"),
        ({"turn_rewards": "abc"}, "'turn_rewards' must be a list, got 'abc'"),
        ({"turn_rewards": None}, "'turn_rewards' must be a list, got None"),
        ({"turn_rewards": [1.0, float("nan")]}, "turn_rewards[1] must be a finite number, got nan"),
        ({"turn_rewards": [False]}, "turn_rewards[0] must be a finite number, got False"),
        ({"total_reward": "1"}, "'total_reward' must be a finite number, got '1'"),
        ({"total_reward": None}, "'total_reward' must be a finite number, got None"),
        ({"group": [1]}, "'group' must be a string, a number or null, got [1]"),
        ({"group": 0, "seed": {"a": 1}}, "'seed' must be a string, a number or null"),
    ],
)
def test_malformed_trajectory_fields_name_the_record_and_field(
    tokenizer: Any, fields: dict[str, Any], message: str
) -> None:
    records = [_GOOD, {**_GOOD, **fields}]
    with pytest.raises(SFTDataError, match=re.escape(f"record 1 (trajectory): {message}")):
        load_sft_examples(records, tokenizer)


def test_well_typed_trajectory_fields_are_read_as_given(tokenizer: Any) -> None:
    record = {**_GOOD, "mask": [False, True, True], "turn_rewards": [1, 0.5], "env_id": "e", "group": "g"}
    read = trajectory_record(record, 0)
    assert read == TrajectoryRecord([1, 2, 3], [0, 1, 1], 1.5, ("e", None, "g"))
    assert type(read.mask[1]) is int
    assert trajectory_record({**_GOOD, "total_reward": -2}, 0).reward == -2.0


def test_token_ids_outside_the_vocabulary_are_refused_with_the_record(tokenizer: Any) -> None:
    top = len(tokenizer) - 1
    (example,), _ = load_sft_examples([{"token_ids": [1, 2, top], "mask": [0, 1, 1]}], tokenizer)
    assert example.input_ids == [1, 2, top]
    for token in (top + 1, 999999, -1):
        records = [_GOOD, {"token_ids": [1, 2, token], "mask": [0, 1, 1]}]
        with pytest.raises(
            SFTDataError, match=re.escape(f"record 1 (trajectory): token_ids[2] is {token}, outside")
        ):
            load_sft_examples(records, tokenizer)
    # The model's embedding may have more rows than the tokenizer has tokens.
    (wide,), _ = load_sft_examples(
        [{"token_ids": [1, 2, top + 1], "mask": [0, 1, 1]}], tokenizer, vocab_size=top + 2
    )
    assert wide.input_ids[-1] == top + 1
    trajectory = dataclasses.replace(guessing_trajectory(tokenizer))
    trajectory.token_ids = [*trajectory.token_ids[:-1], top + 1]
    with pytest.raises(SFTDataError, match=re.escape("record 0 (trajectory): token_ids[")):
        load_sft_examples([trajectory], tokenizer)
