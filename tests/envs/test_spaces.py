import copy
import pickle

import pytest
from gymnasium import spaces

from mrlm.envs.core.spaces import TextSpace, text_observation_space


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


def test_not_flattenable_and_rejects_bad_sample_bound() -> None:
    assert not TextSpace(4).is_np_flattenable
    with pytest.raises(ValueError, match="sample_max_length"):
        TextSpace(10, min_length=5, sample_max_length=2)


def test_text_observation_space_is_a_dict_with_text() -> None:
    space = text_observation_space(50)
    assert isinstance(space, spaces.Dict)
    assert space.contains({"text": "any ✓ text"})
    assert not space.contains({"text": "x" * 51})
    assert not space.contains("bare string")
    space.seed(0)
    assert isinstance(space.sample()["text"], str)
