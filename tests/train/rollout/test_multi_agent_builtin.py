"""Every built-in multi-agent env, as AEC and as Parallel env, in both joint modes, with one shared
policy and with two different policies (tiny models of different sizes and vocabularies)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

import mrlm.envs
from mrlm.train.generation import HFGenerator, SamplingParams
from mrlm.train.rollout import Policy, RolloutEngine, Trajectory, by_policy, collate, load_jsonl, save_jsonl
from tests.train.rollout.multi_checks import Recording, align_rewards, cross_credits, masked_segments, replies

ENVS: dict[str, dict[str, Any]] = {
    "mrlm/Debate-v0": {"rounds": 2, "reward_mode": "scores"},
    "mrlm/CoopCode-v0": {"max_turns": 1},
    "mrlm/ClassCompletion-v0": {"max_turns": 1},
    "mrlm/Writing-v0": {"rounds": 2},
}
SEEDS = [0, 1]
GROUP = 2
SAMPLING = SamplingParams(max_new_tokens=12, temperature=1.0, seed=5)


@dataclasses.dataclass
class Case:
    env_id: str
    kind: Any
    joint: Any
    shared: bool
    rows: list[Trajectory]
    recordings: dict[str, Recording]
    tokenizers: dict[str, Any]
    agents: list[str]
    rounds: int

    def make(self) -> Any:
        return mrlm.envs.make(self.env_id, kind=self.kind, **ENVS[self.env_id])


CASES = [
    (env_id, kind, joint, shared)
    for env_id in ENVS
    for kind in ("aec", "parallel")
    for joint in ("align", "cross")
    for shared in (True, False)
]


@pytest.fixture(
    scope="module",
    params=CASES,
    ids=[f"{e.split('/')[1]}-{k}-{j}-{'shared' if s else 'two'}" for e, k, j, s in CASES],
)
def case(
    request: pytest.FixtureRequest, tokenizer: Any, lively_model: Any, other_tokenizer: Any, other_model: Any
) -> Case:
    env_id, kind, joint, shared = request.param
    agents = list(mrlm.envs.make(env_id, kind=kind, **ENVS[env_id]).possible_agents)
    recordings = {"A": Recording(HFGenerator(lively_model, tokenizer))}
    tokenizers = {"A": tokenizer}
    if shared:
        policies = {"A": Policy(recordings["A"], tokenizer)}
        agent_policies = None
    else:
        recordings["B"] = Recording(HFGenerator(other_model, other_tokenizer))
        tokenizers["B"] = other_tokenizer
        policies = {name: Policy(recordings[name], tokenizers[name]) for name in ("A", "B")}
        agent_policies = {agents[0]: "A", agents[1]: "B"}
    engine = RolloutEngine(
        env_id,
        policies,
        sampling=SAMPLING,
        agent_policies=agent_policies,
        kind=kind,
        joint=joint,
        env_kwargs=ENVS[env_id],
    )
    with engine:
        rows = engine.collect(SEEDS, group_size=GROUP)
    rounds = ENVS[env_id].get("rounds", 1)
    return Case(env_id, kind, joint, shared, rows, recordings, tokenizers, agents, rounds)


def test_rows_come_in_groups_of_one_agent(case: Case) -> None:
    rows = case.rows
    blocks = [rows[i : i + GROUP] for i in range(0, len(rows), GROUP)]
    for block in blocks:
        assert len({(t.group, t.agent, t.seed, t.policy, t.env_id) for t in block}) == 1
        assert [t.sample for t in block] == list(range(GROUP))
    assert len({block[0].group for block in blocks}) == len(blocks)
    if case.joint == "align":
        assert [(b[0].seed, b[0].agent) for b in blocks] == [(s, a) for s in SEEDS for a in case.agents]
        # The rows of one joint episode: one per agent, same seed.
        episodes = Counter(t.episode for t in rows)
        assert set(episodes.values()) == {len(case.agents)} and len(episodes) == len(SEEDS) * GROUP
    else:
        # One group per seed, round and agent (the tiny model never ends these envs early).
        assert len(blocks) == len(SEEDS) * case.rounds * len(case.agents)
        assert [b[0].num_turns for b in blocks] == [
            r + 1 for _ in SEEDS for r in range(case.rounds) for _ in case.agents
        ]
    expected = {case.agents[0]: "A", case.agents[1]: "A" if case.shared else "B"}
    assert all(t.policy == expected[str(t.agent)] for t in rows)


def test_each_agent_s_mask_covers_its_own_replies_only(case: Case) -> None:
    for name, rows in by_policy(case.rows).items():
        segments = [s for row in rows for s in masked_segments(row)]
        # Every sampled reply of the policy is trained exactly once, in the row of the agent that wrote it.
        assert Counter(segments) == Counter(tuple(c.token_ids) for c in case.recordings[name].completions)
        vocabulary = len(case.tokenizers[name])
        for row in rows:
            assert max(row.token_ids) < vocabulary
            tokenizer = case.tokenizers[name]
            for (start, end), reply, reason in zip(
                row.turn_spans, replies(row), row.finish_reasons, strict=True
            ):
                body = row.token_ids[start : end - 1] if reason == "stop" else row.token_ids[start:end]
                assert tokenizer.decode(body, skip_special_tokens=True) == reply
            # The agent's conversation opens with its own role.
            assert row.messages[0]["role"] == "system" and row.messages[0]["content"].endswith(
                f"You are {row.agent}."
            )


def test_rewards_match_replaying_the_replies(case: Case) -> None:
    if case.joint == "align":
        episodes: dict[int | None, list[Trajectory]] = {}
        for row in case.rows:
            episodes.setdefault(row.episode, []).append(row)
        for members in episodes.values():
            moves = {row.agent: replies(row) for row in members if row.agent is not None}
            expected = align_rewards(case.make, case.kind, members[0].seed or 0, moves)
            for row in members:
                assert row.turn_rewards == pytest.approx(expected[str(row.agent)], abs=1e-9)
                assert row.terminated and not row.truncated
    else:
        rows = case.rows
        n = len(case.agents)
        for start in range(0, len(rows), n * GROUP):
            groups = [rows[start + k * GROUP : start + (k + 1) * GROUP] for k in range(n)]
            credits = cross_credits(case.make, case.kind, groups[0][0].seed or 0, groups)
            for group, credit in zip(groups, credits, strict=True):
                assert [t.total_reward for t in group] == pytest.approx(credit, abs=1e-9)
                assert all(t.turn_rewards[:-1] == [0.0] * (t.num_turns - 1) for t in group)


def test_jsonl_round_trip(case: Case, tmp_path: Path) -> None:
    assert load_jsonl(save_jsonl(tmp_path / "rows.jsonl", case.rows)) == case.rows


def test_collated_token_rewards_and_spans(case: Case) -> None:
    for name, rows in by_policy(case.rows).items():
        batch = collate(rows, case.tokenizers[name].pad_token_id)
        assert batch.token_rewards is not None
        torch.testing.assert_close(batch.token_rewards.sum(dim=1), batch.rewards)
        assert batch.turn_spans == [t.turn_spans for t in rows]
        assert batch.agents == [t.agent for t in rows] and batch.policies == [name] * len(rows)
        for row, trajectory in enumerate(rows):
            for (_, end), reward in zip(trajectory.turn_spans, trajectory.turn_rewards, strict=True):
                assert float(batch.token_rewards[row, end - 1]) == pytest.approx(reward, abs=1e-6)
