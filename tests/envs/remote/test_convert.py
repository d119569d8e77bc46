"""Spaces and values survive the trip through their protobuf messages; addresses and remote ids parse."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

from mrlm.envs.core.spaces import TextSpace, text_observation_space
from mrlm.envs.remote import RemoteId, is_remote_id, parse_address, parse_remote_id
from mrlm.envs.remote.convert import (
    OpaqueSpace,
    space_from_proto,
    space_to_proto,
    value_from_proto,
    value_to_proto,
)
from mrlm.proto.v1 import env_pb2 as pb

SPACES: list[spaces.Space[Any]] = [
    TextSpace(100),
    TextSpace(5, min_length=2),
    spaces.Text(8, min_length=1, charset="abc"),
    spaces.Discrete(7, start=-3),
    spaces.Box(low=-1.5, high=2.0, shape=(2, 3), dtype=np.float32),
    spaces.Box(low=0, high=255, shape=(4,), dtype=np.uint8),
    spaces.Box(low=-np.inf, high=np.inf, shape=(), dtype=np.float64),
    text_observation_space(64),
    spaces.Dict(
        {"board": spaces.Box(0, 1, (3, 3), np.int64), "note": TextSpace(10), "turn": spaces.Discrete(2)}
    ),
]


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_spaces_round_trip_equal_and_their_samples_round_trip_exactly(space: spaces.Space[Any]) -> None:
    message = space_to_proto(space)
    rebuilt = space_from_proto(pb.Space.FromString(message.SerializeToString()))
    assert rebuilt == space and type(rebuilt) is type(space)
    space.seed(3)
    for _ in range(5):
        sample = space.sample()
        back = value_from_proto(pb.Value.FromString(value_to_proto(sample).SerializeToString()), rebuilt)
        assert rebuilt.contains(back)
        assert data_equivalence(back, sample, exact=True), (back, sample)


def test_unknown_spaces_travel_as_opaque() -> None:
    message = space_to_proto(spaces.MultiBinary(3))
    assert message.WhichOneof("kind") is None
    opaque = space_from_proto(message)
    assert isinstance(opaque, OpaqueSpace) and opaque.contains([0, 1, 1]) and opaque == OpaqueSpace()
    with pytest.raises(NotImplementedError):
        opaque.sample()


def test_values_keep_their_types() -> None:
    assert value_to_proto("plain text\n").text == "plain text\n"
    assert value_to_proto(None).WhichOneof("kind") is None
    assert value_from_proto(pb.Value(), TextSpace(3)) is None
    assert value_to_proto({"a": [1, 2.0, True, None]}).json == '{"a":[1,2.0,true,null]}'
    assert value_from_proto(pb.Value(json="3"), spaces.Discrete(5)) == np.int64(3)
    assert type(value_from_proto(pb.Value(json="3"), spaces.Discrete(5))) is np.int64
    with pytest.raises(ValueError, match="shape"):
        value_from_proto(pb.Value(json="[1, 2]"), spaces.Box(0, 1, (3,)))
    with pytest.raises(ValueError, match="not JSON-encodable"):
        value_to_proto(b"bytes")


def test_addresses_and_remote_ids_parse() -> None:
    assert parse_address("127.0.0.1:50051") == ("127.0.0.1:50051", False)
    assert parse_address("grpcs://envs.example.org") == ("envs.example.org:50051", True)
    assert parse_address("grpc://[::1]:7000/") == ("[::1]:7000", False)
    remote = parse_remote_id("grpc://localhost:9000/mrlm/Math-v0")
    assert remote == RemoteId(target="localhost:9000", env_id="mrlm/Math-v0", tls=False)
    assert str(remote) == "grpc://localhost:9000/mrlm/Math-v0" and remote.address == "grpc://localhost:9000"
    assert parse_remote_id("grpcs://h/ns/Env-v1").tls is True
    assert is_remote_id("grpcs://h/x") and not is_remote_id("mrlm/Math-v0")
    for bad, message in [
        ("http://h:1", "unknown scheme"),
        ("h:99999", "bad port"),
        (":50051", "no host"),
        ("h:1/mrlm/Math-v0", "did you pass an env id"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_address(bad)
    with pytest.raises(ValueError, match="names no env"):
        parse_remote_id("grpc://h:1/")
