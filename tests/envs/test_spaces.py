import copy
import pickle
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector import AsyncVectorEnv

from mrlm.envs.core.spaces import TextSpace, text_observation_space
from mrlm.envs.core.text_env import Feedback, TextEnv


def test_contains_any_unicode_within_bounds() -> None:
    space = TextSpace(10, min_length=2)
    assert space.contains("héllo\n✓")
    assert space.contains("ab")
    assert not space.contains("a")  # below min_length
    assert not space.contains("x" * 11)  # above max_length
    assert not space.contains(b"bytes")
    assert not space.contains(123)


def test_empty_string_allowed_by_default() -> None:
    assert TextSpace(5).contains("")


def test_sample_is_bounded_by_sample_max_length_and_seeded() -> None:
    space = TextSpace(1_000_000, sample_max_length=16, seed=0)
    samples = [space.sample() for _ in range(200)]
    assert max(len(s) for s in samples) <= 16
    assert all(space.contains(s) for s in samples)
    again = TextSpace(1_000_000, sample_max_length=16, seed=0)
    assert [again.sample() for _ in range(200)] == samples


def test_sample_with_mask_keeps_text_semantics() -> None:
    space = TextSpace(8, seed=1)
    assert len(space.sample(mask=(5, None))) == 5


def test_equality_pickle_and_deepcopy() -> None:
    space = TextSpace(100, min_length=1)
    assert space == TextSpace(100, min_length=1)
    assert space != TextSpace(101, min_length=1)
    assert pickle.loads(pickle.dumps(space)) == space
    assert copy.deepcopy(space).sample_max_length == space.sample_max_length


def test_rejects_bad_sample_bound() -> None:
    with pytest.raises(ValueError, match="sample_max_length"):
        TextSpace(10, min_length=5, sample_max_length=2)


#: Characters Text's charset lacks: accents, symbols, CJK, NUL, a lone surrogate, an emoji.
UNICODE = "héllo ✓ 世界 \x00\ud800😀"


def test_any_member_flattens_and_round_trips() -> None:
    space = TextSpace(20)
    assert space.is_np_flattenable
    flat_space = flatten_space(space)
    assert isinstance(flat_space, spaces.Box) and flat_space == spaces.Box(0, 0x110000, (20,), np.int32)
    for text in (UNICODE, "", "x" * 20, space.sample()):
        flat = np.asarray(flatten(space, text))
        assert flat.dtype == np.int32 and flat.shape == (20,) and flat_space.contains(flat)
        assert unflatten(space, flat) == text
    # Code points plus one, zeros after the end: "é" is U+00E9.
    assert np.asarray(flatten(space, "é")).tolist() == [0xE9 + 1] + [0] * 19
    with pytest.raises(ValueError, match="not a member"):
        flatten(space, "x" * 21)


def test_the_observation_dict_flattens_too() -> None:
    space = text_observation_space(30)
    assert unflatten(space, flatten(space, {"text": UNICODE})) == {"text": UNICODE}


class _UnicodeEcho(TextEnv):
    """Answers every reply with the reply and non-ASCII text."""

    def __init__(self) -> None:
        super().__init__(max_turns=2, max_observation_length=64, max_action_length=32)

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return UNICODE, {}

    def _respond(self, action: str) -> Feedback:
        return Feedback(f"{action} → {UNICODE}", 1.0, done=False)


def test_async_vector_env_refuses_shared_memory_and_carries_any_text_without() -> None:
    with pytest.raises(ValueError, match="shared_memory=False") as caught:
        AsyncVectorEnv([_UnicodeEcho, _UnicodeEcho], shared_memory=True)
    assert isinstance(caught.value.__cause__, CustomSpaceError)
    assert "TextSpace observations are str" in str(caught.value.__cause__)
    envs = AsyncVectorEnv([_UnicodeEcho, _UnicodeEcho], shared_memory=False)
    try:
        observations, _ = envs.reset(seed=0)
        assert tuple(observations) == (UNICODE, UNICODE)
        observations, rewards, *_ = envs.step(("ça", "日本"))
        assert tuple(observations) == (f"ça → {UNICODE}", f"日本 → {UNICODE}")
        assert rewards.tolist() == [1.0, 1.0]
    finally:
        envs.close()
