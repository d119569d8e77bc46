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

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
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


def trajectory_record(
    record: Mapping[str, Any] | Trajectory, index: int, *, vocab_size: int | None = None
) -> TrajectoryRecord:
    """Read a :class:`Trajectory` or a dict with its fields (``token_ids`` and ``mask`` required).

    A dict's fields must have exactly these types: ``token_ids`` a list of integers (not bools, not
    floats); ``mask`` a list of 0/1 integers or bools as long as ``token_ids``; ``turn_rewards`` a
    list of finite numbers and ``total_reward`` a finite number, each optional (null is refused);
    ``env_id``, ``seed`` and ``group`` (read when ``group`` is given) strings, numbers or null.
    Nothing is coerced, so a string or a float never turns silently into tokens.

    The reward is the sum of ``turn_rewards`` (else ``total_reward``); the group key is
    ``(env_id, seed, group)`` from what the record has, since group ids are unique only within one
    rollout engine.

    Args:
        vocab_size: when given, every token id (of a dict or a :class:`Trajectory`) must lie in
            ``[0, vocab_size)``: an id the model has no embedding for would fail inside it.

    Raises:
        ValueError: naming record ``index`` and the field, when fields are missing, of the wrong
            type or inconsistent, or a token id lies outside the vocabulary.
    """
    if isinstance(record, Trajectory):
        token_ids, mask = list(record.token_ids), list(record.mask)
        reward: float | None = record.total_reward
        group: Hashable | None = (record.env_id, record.seed, record.group)
    else:
        token_ids, mask, reward, group = _fields(record, index)
    if vocab_size is not None:
        outside = next((t for t, token in enumerate(token_ids) if not 0 <= token < vocab_size), None)
        if outside is not None:
            raise ValueError(
                f"record {index} (trajectory): token_ids[{outside}] is {token_ids[outside]}, outside the "
                f"vocabulary of {vocab_size} tokens (ids 0 to {vocab_size - 1})"
            )
    return TrajectoryRecord(token_ids, mask, reward, group)


def _fields(
    record: Mapping[str, Any], index: int
) -> tuple[list[int], list[int], float | None, Hashable | None]:
    """``token_ids``, ``mask``, reward and group key of a trajectory dict, checked (see above)."""
    where = f"record {index} (trajectory)"
    missing = [name for name in ("token_ids", "mask") if name not in record]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    token_ids = _list(record["token_ids"], where, "token_ids", _is_int, "an integer")
    mask = _list(record["mask"], where, "mask", _is_bit, "0 or 1")
    if len(token_ids) != len(mask):
        raise ValueError(f"{where}: token_ids and mask differ in length: {len(token_ids)} and {len(mask)}")
    reward: float | None = None
    if "turn_rewards" in record:
        rewards = _list(record["turn_rewards"], where, "turn_rewards", _is_finite, "a finite number")
        reward = float(sum(rewards))
    elif "total_reward" in record:
        total = record["total_reward"]
        if not _is_finite(total):
            raise ValueError(f"{where}: 'total_reward' must be a finite number, got {total!r}")
        reward = float(total)
    group: Hashable | None = None
    if "group" in record:
        key = tuple(record.get(name) for name in ("env_id", "seed", "group"))
        for name, value in zip(("env_id", "seed", "group"), key, strict=True):
            # The key is hashed to rank the trajectories of a group: a list or dict could not be.
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, Real))):
                raise ValueError(f"{where}: {name!r} must be a string, a number or null, got {value!r:.40}")
        group = key
    return [int(t) for t in token_ids], [int(m) for m in mask], reward, group


def _list(value: object, where: str, name: str, valid: Callable[[object], bool], expected: str) -> list[Any]:
    """``value`` checked to be a list (or tuple) whose every item is ``valid``."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: {name!r} must be a list, got {value!r:.40}")
    bad = next((k for k, item in enumerate(value) if not valid(item)), None)
    if bad is not None:
        raise ValueError(f"{where}: {name}[{bad}] must be {expected}, got {value[bad]!r:.40}")
    return list(value)


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _is_bit(value: object) -> bool:
    return isinstance(value, Integral) and value in (0, 1)


def _is_finite(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


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
