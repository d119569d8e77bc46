"""Behavioural cloning and world modelling on recorded trajectories, without re-tokenizing.

A trajectory's ``token_ids`` and ``mask`` are used exactly as the policy read and wrote them (see
:class:`mrlm.train.rollout.Trajectory`): re-rendering the conversation could tokenize the replies
differently from how they were sampled.

The environment's tokens are the ones the model did not write after the opening prompt. The opening
prompt ends where the first reply starts: the rollout builds a trajectory from the template's
rendering of the opening messages with the generation prompt, then appends each sampled reply
(mask 1) and, for each environment turn, the template's text between renderings (the closing markup
of the reply, the turn, and the next generation prompt; mask 0). So the mask alone locates every
environment turn, whatever the template.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from mrlm.train.rollout.trajectory import Trajectory
from mrlm.train.sft.example import SFTExample, Target


@dataclass(frozen=True)
class TrajectoryRecord:
    """The fields of a trajectory that supervised training reads."""

    token_ids: list[int]
    mask: list[int]
    """1 on the tokens the policy generated."""
    reward: float | None
    """The total reward (sum of the turn rewards); None when the record has none."""
    group: Hashable | None
    """Identifies the episodes that answered the same task; None when the record has no group."""


def trajectory_record(record: Mapping[str, Any] | Trajectory, index: int) -> TrajectoryRecord:
    """Read a :class:`Trajectory` or a dict with its fields (``token_ids`` and ``mask`` required).

    The reward is the sum of ``turn_rewards`` (else ``total_reward``); the group key is
    ``(env_id, seed, group)`` from what the record has, since group ids are unique only within one
    rollout engine.

    Raises:
        ValueError: naming record ``index``, when fields are missing or inconsistent.
    """
    if isinstance(record, Trajectory):
        return TrajectoryRecord(
            list(record.token_ids),
            list(record.mask),
            record.total_reward,
            (record.env_id, record.seed, record.group),
        )
    missing = [name for name in ("token_ids", "mask") if name not in record]
    if missing:
        raise ValueError(f"record {index} (trajectory): missing field(s) {', '.join(map(repr, missing))}")
    token_ids, mask = [int(t) for t in record["token_ids"]], [int(m) for m in record["mask"]]
    if len(token_ids) != len(mask):
        raise ValueError(
            f"record {index} (trajectory): token_ids and mask differ in length: {len(token_ids)} and {len(mask)}"
        )
    if any(m not in (0, 1) for m in mask):
        raise ValueError(f"record {index} (trajectory): mask holds values other than 0 and 1")
    reward: float | None = None
    if "turn_rewards" in record:
        reward = float(sum(record["turn_rewards"]))
    elif "total_reward" in record:
        reward = float(record["total_reward"])
    group = (record.get("env_id"), record.get("seed"), record["group"]) if "group" in record else None
    return TrajectoryRecord(token_ids, mask, reward, group)


def trajectory_example(record: TrajectoryRecord, target: Target = "assistant") -> SFTExample:
    """The trajectory's own tokens with the loss on the policy's tokens, the environment's, or both.

    ``"assistant"`` uses the mask as is; ``"environment"`` marks the tokens after the first
    generated one whose mask is 0 (module docstring); ``"both"`` the union.
    """
    if target == "assistant":
        return SFTExample(list(record.token_ids), list(record.mask))
    prompt_end = next((t for t, m in enumerate(record.mask) if m), len(record.mask))
    environment = [int(t >= prompt_end and not m) for t, m in enumerate(record.mask)]
    if target == "environment":
        return SFTExample(list(record.token_ids), environment)
    if target == "both":
        return SFTExample(
            list(record.token_ids), [e | m for e, m in zip(environment, record.mask, strict=True)]
        )
    raise ValueError(f"target must be 'assistant', 'environment' or 'both', got {target!r}")
