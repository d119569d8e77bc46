"""The rollout engine with the tiny model on mrlm/Math-v0, single-turn and multi-turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

import mrlm.envs
from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, HFGenerator, SamplingParams, token_logprobs
from mrlm.train.rollout import RolloutEngine, Trajectory, collate, load_jsonl, save_jsonl

SEEDS = [0, 1, 2]
GROUP = 3
SAMPLING = SamplingParams(max_new_tokens=24, temperature=1.0, seed=11)


def _engine(model: Any, tokenizer: Any, max_turns: int) -> RolloutEngine:
    return RolloutEngine(
        "mrlm/Math-v0",
        HFGenerator(model, tokenizer),
        tokenizer,
        SAMPLING,
        env_kwargs={"level": 1, "max_turns": max_turns},
    )


Run = tuple[int, list[Trajectory], list[Completion]]


class Recording:
    """Passes generate calls through and keeps every completion."""

    def __init__(self, inner: HFGenerator) -> None:
        self.inner = inner
        self.completions: list[Completion] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        out = self.inner.generate(prompts, params)
        self.completions += out
        return out


@pytest.fixture(scope="module", params=[1, 3], ids=["single_turn", "multi_turn"])
def run(request: pytest.FixtureRequest, lively_model: Any, tokenizer: Any) -> Run:
    """(max_turns, trajectories, every completion the model sampled)."""
    max_turns = request.param
    recording = Recording(HFGenerator(lively_model, tokenizer))
    with _engine(lively_model, tokenizer, max_turns) as engine:
        engine.generator = recording
        return max_turns, engine.collect(SEEDS, group_size=GROUP), recording.completions


def test_groups_share_their_task(run: Run) -> None:
    _, trajectories, _ = run
    assert len(trajectories) == len(SEEDS) * GROUP
    questions = []
    for i, seed in enumerate(SEEDS):
        group = trajectories[i * GROUP : (i + 1) * GROUP]
        assert {t.seed for t in group} == {seed} and len({t.group for t in group}) == 1
        assert len({t.messages[1]["content"] for t in group}) == 1
        assert group[0].messages[0]["role"] == "system"
        questions.append(group[0].messages[1]["content"])
    assert len(set(questions)) == len(SEEDS)
    replies = [t.messages[2]["content"] for t in trajectories]
    assert len(set(replies)) == len(replies), "sampled replies should differ"


def test_turns_and_endings(run: Run) -> None:
    max_turns, trajectories, _ = run
    for trajectory in trajectories:
        assert trajectory.terminated and not trajectory.truncated
        assert 1 <= trajectory.num_turns <= max_turns
        assert len(trajectory.infos) == len(trajectory.finish_reasons) == trajectory.num_turns
        roles = [m["role"] for m in trajectory.messages]
        assert roles == ["system", "user"] + ["assistant", "user"] * (trajectory.num_turns - 1) + [
            "assistant"
        ]
    if max_turns > 1:
        assert any(t.num_turns > 1 for t in trajectories)


def test_rewards_match_replaying_the_replies(run: Run) -> None:
    max_turns, trajectories, _ = run
    env = mrlm.envs.make("mrlm/Math-v0", level=1, max_turns=max_turns)
    for trajectory in trajectories:
        env.reset(seed=trajectory.seed)
        replies = [m["content"] for m in trajectory.messages if m["role"] == "assistant"]
        rewards = [env.step(reply)[1] for reply in replies]
        assert rewards == trajectory.turn_rewards
    env.close()


def test_mask_covers_exactly_the_generated_tokens(run: Run) -> None:
    _, trajectories, completions = run
    segments = [tuple(s) for t in trajectories for s in _masked_segments(t)]
    assert sorted(segments) == sorted(tuple(c.token_ids) for c in completions)
    assert all(len(_masked_segments(t)) == t.num_turns for t in trajectories)


def test_tokens_decode_to_the_template_rendering(run: Run, tokenizer: Any) -> None:
    """Sampled ids are not re-tokenized, so compare text: the ids spell the template's rendering."""
    _, trajectories, _ = run
    special = set(tokenizer.all_special_ids)
    end_id = tokenizer.convert_tokens_to_ids(IM_END)
    checked = 0
    for trajectory in trajectories:
        segments = _masked_segments(trajectory)
        replies = [m["content"] for m in trajectory.messages if m["role"] == "assistant"]
        for segment, reply, reason in zip(segments, replies, trajectory.finish_reasons, strict=True):
            body = segment[:-1] if reason == "stop" else segment
            assert tokenizer.decode(body, skip_special_tokens=True) == reply
            assert (reason == "stop") == (segment[-1] in special and len(body) < SAMPLING.max_new_tokens)
        # A stray special token inside a reply is in the ids but not in the message text.
        if any(special & set(s[:-1]) or s[-1] in special - {end_id} for s in segments):
            continue
        checked += 1
        rendered = tokenizer.apply_chat_template(trajectory.messages, tokenize=False)
        decoded = tokenizer.decode(trajectory.token_ids, skip_special_tokens=False)
        closing = "\n" if trajectory.finish_reasons[-1] == "stop" else IM_END + "\n"
        assert rendered == decoded + closing
    assert checked >= len(trajectories) // 2


def test_logprobs_equal_recomputation(run: Run, lively_model: Any, tokenizer: Any) -> None:
    _, trajectories, _ = run
    batch = collate(trajectories, tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = token_logprobs(
            lively_model, batch.input_ids, batch.attention_mask, batch.mask, SAMPLING.temperature
        )
    torch.testing.assert_close(recomputed, batch.old_logprobs, atol=1e-4, rtol=0)
    assert bool((batch.old_logprobs[batch.mask.bool()] < 0).all())


def test_same_seed_same_trajectories(lively_model: Any, tokenizer: Any) -> None:
    first = _engine(lively_model, tokenizer, 2)
    second = _engine(lively_model, tokenizer, 2)
    a = first.collect([4, 5], group_size=2)
    assert second.collect([4, 5], group_size=2) == a
    # A second call draws new noise.
    again = first.collect([4, 5], group_size=2)
    assert [t.token_ids for t in again] != [t.token_ids for t in a]


def test_jsonl_round_trip(run: Run, tmp_path: Path) -> None:
    _, trajectories, _ = run
    assert load_jsonl(save_jsonl(tmp_path / "rollouts.jsonl", trajectories)) == trajectories


def _masked_segments(trajectory: Trajectory) -> list[list[int]]:
    segments: list[list[int]] = []
    previous = 0
    for token, bit in zip(trajectory.token_ids, trajectory.mask, strict=True):
        if bit and not previous:
            segments.append([])
        if bit:
            segments[-1].append(token)
        previous = bit
    return segments
