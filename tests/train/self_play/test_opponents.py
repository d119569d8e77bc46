"""The learner against an opponent: one seat per task, dealt in turn, and only the learner's rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mrlm.train.algorithms.magrpo import MAGRPOConfig
from mrlm.train.algorithms.multi_agent import collect_rows
from mrlm.train.algorithms.onpolicy import TaskSeeds
from mrlm.train.generation import SamplingParams
from mrlm.train.rollout import Policy, RolloutEngine
from mrlm.train.self_play import FixedReply
from mrlm.train.self_play.opponents import OpponentRollout
from tests.train.self_play.games import Longer


def _rollout(tokenizer: Any) -> OpponentRollout:
    def engine_with(
        policies: Mapping[str, Policy], agent_policies: Callable[[str | None], str]
    ) -> RolloutEngine:
        return RolloutEngine(
            Longer, policies, sampling=SamplingParams(max_new_tokens=4), agent_policies=agent_policies
        )

    learner = Policy(FixedReply(tokenizer, "a longer reply"), tokenizer)
    opponent = Policy(FixedReply(tokenizer, "short"), tokenizer)
    return OpponentRollout(engine_with, ("policy", learner), opponent, ["north", "south"])


def test_tasks_are_dealt_to_the_seats_in_turn_and_only_the_learner_rows_come_back(tokenizer: Any) -> None:
    rollout = _rollout(tokenizer)
    rows = rollout.collect([11, 12, 13], group_size=2)
    assert all(row.policy == "policy" for row in rows)
    assert [(row.seed, row.agent) for row in rows] == [
        (11, "north"),
        (11, "north"),
        (13, "north"),
        (13, "north"),
        (12, "south"),
        (12, "south"),
    ]
    assert all(row.total_reward == 1.0 for row in rows)  # the longer reply wins from either seat
    groups: dict[int, set[tuple[int | None, str | None]]] = {}
    for row in rows:
        groups.setdefault(row.group, set()).add((row.seed, row.agent))
    assert all(len(members) == 1 for members in groups.values())  # one agent, one task per group
    # The deal goes on where it stopped: the fourth task goes south.
    assert {row.agent for row in rollout.collect([14])} == {"south"}


def test_the_deal_and_the_engine_continue_from_the_state(tokenizer: Any) -> None:
    first = _rollout(tokenizer)
    first.collect([1, 2, 3])
    second = _rollout(tokenizer)
    second.load_state_dict(first.state_dict())
    a, b = first.collect([4, 5]), second.collect([4, 5])
    assert [(row.agent, row.group, row.episode) for row in a] == [
        (row.agent, row.group, row.episode) for row in b
    ]


def test_the_step_trains_on_the_learner_rows_only(tokenizer: Any, tmp_path: Any) -> None:
    config = MAGRPOConfig(credit="agent", group_size=2, prompts_per_step=2, opponent_pool=2)
    collected = collect_rows(_rollout(tokenizer), TaskSeeds(base=0, rank=0, world_size=1), config)
    assert [row.agent for row in collected.rows] == ["north", "north", "south", "south"]
    assert {row.policy for row in collected.rows} == {"policy"}
    assert collected.rewards.tolist() == [1.0] * 4
