"""One agent's episode as the trainer sees it: the conversation, its tokens, and what the env paid.

A single-agent episode is one :class:`Trajectory`; a multi-agent episode gives one per agent, each
holding only that agent's conversation (``agent`` names it, ``policy`` the policy that played it,
``episode`` the joint episode the rows share). Files written before these fields existed load with
their defaults (and ``turn_spans`` derived from the mask).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mrlm.train.rollout.policies import DEFAULT_POLICY

Truncation = Literal["env", "max_turns", "prompt_too_long"]


@dataclass
class Trajectory:
    """One agent's side of an episode of a text env, played by its policy (the whole episode when
    the env has one agent).

    ``token_ids``, ``mask`` and ``logprobs`` have the same length ``T`` and describe the conversation
    exactly as the model read and wrote it: the prompt of each turn is the chat template's rendering,
    and each reply is the sampled token ids (never re-tokenized). The sequence ends with the last
    generated token (or with the last prompt when the episode ended before a reply).
    """

    env_id: str
    """The env's id (or the factory's name)."""
    seed: int | None
    """The seed the env was reset with: members of a group share it, hence the task."""
    group: int
    """Id of the group of rows that answered the same task (unique within one engine): one agent's
    rows of one seed (``align``), or of one seed and round (``cross``)."""
    messages: list[dict[str, str]]
    """The chat: system prompt (if any), user turns (env observations), assistant turns (replies)."""
    token_ids: list[int]
    """The whole conversation as token ids."""
    mask: list[int]
    """1 on tokens the model generated (each reply and its end token), 0 on template and env text."""
    logprobs: list[float]
    """Log-prob of each generated token at sampling time (0 where mask is 0)."""
    turn_rewards: list[float] = field(default_factory=list)
    """Reward of each assistant turn, in order (in multi-agent envs, what this agent was paid)."""
    finish_reasons: list[str] = field(default_factory=list)
    """Why each reply ended: "stop" (a stop token) or "length" (the token budget)."""
    infos: list[dict[str, Any]] = field(default_factory=list)
    """The env's step info of each assistant turn."""
    reset_info: dict[str, Any] = field(default_factory=dict)
    """The env's reset info (system prompt, task metadata)."""
    final_observation: str | None = None
    """The env's last observation, which ended the episode and was not shown to the model."""
    terminated: bool = False
    """The env ended the episode (task over)."""
    truncated: bool = False
    """The episode was cut short; see truncation."""
    truncation: Truncation | None = None
    """Why it was cut: "env" (the env said truncated), "max_turns" (the engine's turn cap) or
    "prompt_too_long" (the next prompt exceeded max_prompt_tokens)."""
    agent: str | None = None
    """The agent whose side of the episode this is; None in a single-agent env."""
    policy: str = DEFAULT_POLICY
    """Name of the policy that wrote the replies (its tokenizer made ``token_ids``)."""
    episode: int | None = None
    """Id of the joint episode (unique within one engine): the rows of its agents share it. In the
    ``cross`` joint mode, the id of the episode the row's turns continue."""
    sample: int | None = None
    """Index of the row within its group (the member of an ``align`` group, the sample of ``cross``)."""
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    """``(start, end)`` token range of each reply, one per assistant turn, in order."""

    def __post_init__(self) -> None:
        if not len(self.token_ids) == len(self.mask) == len(self.logprobs):
            raise ValueError(
                f"token_ids, mask and logprobs differ in length: "
                f"{len(self.token_ids)}, {len(self.mask)}, {len(self.logprobs)}"
            )
        # JSON brings spans back as lists; files from before turn_spans existed have none.
        spans = [(int(start), int(end)) for start, end in self.turn_spans]
        self.turn_spans = spans if spans else mask_runs(self.mask)
        for start, end in self.turn_spans:
            if not 0 <= start <= end <= len(self.token_ids):
                raise ValueError(f"turn span {(start, end)} is outside the {len(self.token_ids)} tokens")

    @property
    def total_reward(self) -> float:
        """Sum of the turn rewards (0 for an episode without replies)."""
        return float(sum(self.turn_rewards))

    @property
    def num_turns(self) -> int:
        """Replies the model gave."""
        return len(self.turn_rewards)

    @property
    def num_generated_tokens(self) -> int:
        return int(sum(self.mask))


def mask_runs(mask: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of 1s in ``mask``: the replies, when none of them is empty."""
    runs: list[tuple[int, int]] = []
    start = None
    for position, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = position
        elif not bit and start is not None:
            runs.append((start, position))
            start = None
    return runs


def by_policy(trajectories: Iterable[Trajectory]) -> dict[str, list[Trajectory]]:
    """The trajectories of each policy, in order: each policy's rows collate with its own tokenizer."""
    grouped: dict[str, list[Trajectory]] = {}
    for trajectory in trajectories:
        grouped.setdefault(trajectory.policy, []).append(trajectory)
    return grouped


def save_jsonl(
    path: str | os.PathLike[str],
    trajectories: Iterable[Trajectory],
    *,
    extra: Callable[[Trajectory], Mapping[str, Any]] | None = None,
) -> Path:
    """Write one JSON object per trajectory. Returns the path.

    Floats round-trip exactly; infos must be JSON-like (numpy scalars and arrays are converted to
    Python numbers and lists; tuples come back as lists). ``extra`` adds keys to each line (an
    evaluation's ``success``, say); :func:`load_jsonl` reads only files written without it.
    """
    out = Path(path)
    with out.open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            record = dataclasses.asdict(trajectory)
            if extra is not None:
                record.update(extra(trajectory))
            handle.write(json.dumps(record, default=_to_json, ensure_ascii=False))
            handle.write("\n")
    return out


def load_jsonl(path: str | os.PathLike[str]) -> list[Trajectory]:
    """Read trajectories written by :func:`save_jsonl`."""
    with Path(path).open(encoding="utf-8") as handle:
        return [Trajectory(**json.loads(line)) for line in handle if line.strip()]


def _to_json(value: object) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON: {value!r}")
