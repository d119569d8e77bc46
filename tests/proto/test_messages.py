"""Every message of env.proto survives the wire, and the wire contract stays as published."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import grpc
import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from mrlm.proto.json_codec import decode_json, encode_json
from mrlm.proto.v1 import env_pb2 as pb


def _messages(descriptors: Iterable[Descriptor]) -> Iterator[Descriptor]:
    """Yield the given message types and those nested in them, except generated map entries."""
    for descriptor in descriptors:
        if not descriptor.GetOptions().map_entry:
            yield descriptor
            yield from _messages(descriptor.nested_types)


# Every message type by its name within the package, e.g. "Value" (a nested one would be "Outer.Inner").
DESCRIPTORS = {
    d.full_name.removeprefix("mrlm.v1."): d for d in _messages(pb.DESCRIPTOR.message_types_by_name.values())
}
MESSAGE_NAMES = sorted(DESCRIPTORS)

TEXT = pb.TextSpace(min_length=1, max_length=256, charset="abc ")
DISCRETE = pb.DiscreteSpace(n=4, start=-1)
BOX = pb.BoxSpace(low=[-math.inf, 0.0], high=[math.inf, 1.5], shape=[2], dtype="float32")
FLAT_DICT = pb.DictSpace(spaces={"text": pb.Space(text=TEXT), "turn": pb.Space(discrete=DISCRETE)})
NESTED_DICT = pb.DictSpace(spaces={"inner": pb.Space(dict=FLAT_DICT), "box": pb.Space(box=BOX)})
AGENT_SPEC = pb.AgentSpec(
    agent="player_0", observation_space=pb.Space(dict=NESTED_DICT), action_space=pb.Space(text=TEXT)
)
GYM_SPEC = pb.EnvSpec(
    env_id="word-guess",
    kind=pb.ENV_KIND_GYMNASIUM,
    observation_space=pb.Space(text=TEXT),
    action_space=pb.Space(discrete=DISCRETE),
    metadata_json=encode_json({"render_modes": ["ansi"]}),
)
MULTI_SPEC = pb.EnvSpec(
    env_id="debate",
    kind=pb.ENV_KIND_AEC,
    agents=[AGENT_SPEC, pb.AgentSpec(agent="player_1")],
    max_num_agents=2,
    metadata_json=encode_json({"is_parallelizable": True}),
)
INFO = pb.EnvInfo(
    env_id="debate",
    kinds=[pb.ENV_KIND_AEC, pb.ENV_KIND_PARALLEL],
    description="Two agents argue.",
    default_spec=MULTI_SPEC,
)
AGENT_STATE = pb.AgentState(
    agent="player_0",
    observation=pb.Value(text="Your turn."),
    reward=1.0,
    cumulative_reward=1.5,
    terminated=True,
    truncated=True,
    info_json=encode_json({"turn": 3}),
)
ENV_STATE = pb.EnvState(agents=[AGENT_STATE], live_agents=["player_1"], agent_selection="player_1")
RESET = pb.ResetRequest(session_id="s-1", seed=0, options_json=encode_json({"level": 2}))
ACTIONS = pb.AgentActions(actions={"player_0": pb.Value(text="yes"), "player_1": pb.Value(json="3")})
STEP = pb.StepRequest(session_id="s-1", action=pb.Value(text="go north"))
ERROR = pb.Error(code=grpc.StatusCode.NOT_FOUND.value[0], message="unknown session 's-9'")

# Examples per message type, together setting every field and every oneof member of the type.
EXAMPLES: dict[str, list[Message]] = {
    "Value": [pb.Value(text="look"), pb.Value(json='{"text":"look"}')],
    "Space": [
        pb.Space(text=TEXT),
        pb.Space(discrete=DISCRETE),
        pb.Space(box=BOX),
        pb.Space(dict=NESTED_DICT),
    ],
    "TextSpace": [TEXT],
    "DiscreteSpace": [DISCRETE],
    "BoxSpace": [BOX],
    "DictSpace": [FLAT_DICT, NESTED_DICT],
    "AgentSpec": [AGENT_SPEC],
    "EnvSpec": [GYM_SPEC, MULTI_SPEC],
    "EnvInfo": [INFO],
    "ListEnvsRequest": [pb.ListEnvsRequest()],
    "ListEnvsResponse": [pb.ListEnvsResponse(envs=[INFO, pb.EnvInfo(env_id="x", default_spec=GYM_SPEC)])],
    "OpenSessionRequest": [
        pb.OpenSessionRequest(env_id="debate", kind=pb.ENV_KIND_PARALLEL, kwargs_json='{"rounds":3}')
    ],
    "OpenSessionResponse": [pb.OpenSessionResponse(session_id="s-1", spec=MULTI_SPEC)],
    "ResetRequest": [RESET, pb.ResetRequest(session_id="s-2")],
    "ResetResponse": [pb.ResetResponse(state=ENV_STATE)],
    "AgentActions": [ACTIONS],
    "StepRequest": [
        STEP,
        pb.StepRequest(session_id="s-1", actions=ACTIONS),
        pb.StepRequest(session_id="s-1"),
    ],
    "StepResponse": [pb.StepResponse(state=ENV_STATE)],
    "RenderRequest": [pb.RenderRequest(session_id="s-1")],
    "RenderResponse": [pb.RenderResponse(text="+---+\n| @ |\n+---+\n")],
    "CloseSessionRequest": [pb.CloseSessionRequest(session_id="s-1")],
    "CloseSessionResponse": [pb.CloseSessionResponse()],
    "AgentState": [AGENT_STATE],
    "EnvState": [ENV_STATE],
    "Error": [ERROR],
    "BatchItem": [pb.BatchItem(reset=RESET), pb.BatchItem(step=STEP)],
    "BatchRequest": [pb.BatchRequest(items=[pb.BatchItem(reset=RESET), pb.BatchItem(step=STEP)])],
    "BatchResult": [pb.BatchResult(state=ENV_STATE), pb.BatchResult(error=ERROR)],
    "BatchResponse": [
        pb.BatchResponse(results=[pb.BatchResult(state=ENV_STATE), pb.BatchResult(error=ERROR)])
    ],
}

# Field numbers are the wire contract: changing one breaks every client already deployed.
FIELD_NUMBERS = {
    "Value": "text=1 json=2",
    "Space": "text=1 discrete=2 box=3 dict=4",
    "TextSpace": "min_length=1 max_length=2 charset=3",
    "DiscreteSpace": "n=1 start=2",
    "BoxSpace": "low=1 high=2 shape=3 dtype=4",
    "DictSpace": "spaces=1",
    "AgentSpec": "agent=1 observation_space=2 action_space=3",
    "EnvSpec": "env_id=1 kind=2 observation_space=3 action_space=4 agents=5 max_num_agents=6 metadata_json=7",
    "EnvInfo": "env_id=1 kinds=2 description=3 default_spec=4",
    "ListEnvsRequest": "",
    "ListEnvsResponse": "envs=1",
    "OpenSessionRequest": "env_id=1 kind=2 kwargs_json=3",
    "OpenSessionResponse": "session_id=1 spec=2",
    "ResetRequest": "session_id=1 seed=2 options_json=3",
    "ResetResponse": "state=1",
    "AgentActions": "actions=1",
    "StepRequest": "session_id=1 action=2 actions=3",
    "StepResponse": "state=1",
    "RenderRequest": "session_id=1",
    "RenderResponse": "text=1",
    "CloseSessionRequest": "session_id=1",
    "CloseSessionResponse": "",
    "AgentState": "agent=1 observation=2 reward=3 cumulative_reward=4 terminated=5 truncated=6 info_json=7",
    "EnvState": "agents=1 live_agents=2 agent_selection=3",
    "Error": "code=1 message=2",
    "BatchItem": "reset=1 step=2",
    "BatchRequest": "items=1",
    "BatchResult": "state=1 error=2",
    "BatchResponse": "results=1",
}


def _round_trip(message: Message) -> Message:
    return type(message).FromString(message.SerializeToString())


def test_every_message_has_examples_and_pinned_fields() -> None:
    assert sorted(EXAMPLES) == MESSAGE_NAMES
    assert sorted(FIELD_NUMBERS) == MESSAGE_NAMES


@pytest.mark.parametrize("name", MESSAGE_NAMES)
def test_field_numbers_are_unchanged(name: str) -> None:
    descriptor = DESCRIPTORS[name]
    actual = " ".join(f"{field.name}={field.number}" for field in descriptor.fields)
    assert actual == FIELD_NUMBERS[name]


@pytest.mark.parametrize("name", MESSAGE_NAMES)
def test_examples_set_every_field(name: str) -> None:
    descriptor = DESCRIPTORS[name]
    assert all(example.DESCRIPTOR is descriptor for example in EXAMPLES[name])
    set_fields = {field.name for example in EXAMPLES[name] for field, _ in example.ListFields()}
    assert set_fields == {field.name for field in descriptor.fields}


@pytest.mark.parametrize("name", MESSAGE_NAMES)
def test_round_trip(name: str) -> None:
    for example in EXAMPLES[name]:
        wire = example.SerializeToString()
        back = type(example).FromString(wire)
        assert back == example
        assert back.ListFields() == example.ListFields()
        # Deterministic serialisation orders map entries, so equal messages give equal bytes.
        assert back.SerializeToString(deterministic=True) == example.SerializeToString(deterministic=True)
        assert (wire == b"") == (not example.ListFields())


def test_enum_numbers_are_unchanged() -> None:
    assert dict(pb.EnvKind.items()) == {
        "ENV_KIND_UNSPECIFIED": 0,
        "ENV_KIND_GYMNASIUM": 1,
        "ENV_KIND_AEC": 2,
        "ENV_KIND_PARALLEL": 3,
    }


def test_service_methods_are_unchanged() -> None:
    service = pb.DESCRIPTOR.services_by_name["EnvService"]
    methods = {
        method.name: (
            method.input_type.name,
            method.output_type.name,
            method.client_streaming,
            method.server_streaming,
        )
        for method in service.methods
    }
    assert methods == {
        "ListEnvs": ("ListEnvsRequest", "ListEnvsResponse", False, False),
        "OpenSession": ("OpenSessionRequest", "OpenSessionResponse", False, False),
        "Reset": ("ResetRequest", "ResetResponse", False, False),
        "Step": ("StepRequest", "StepResponse", False, False),
        "Render": ("RenderRequest", "RenderResponse", False, False),
        "CloseSession": ("CloseSessionRequest", "CloseSessionResponse", False, False),
        "Batch": ("BatchRequest", "BatchResponse", False, False),
        "StepStream": ("BatchRequest", "BatchResponse", True, True),
    }


def test_seed_unset_differs_from_zero() -> None:
    unset = _round_trip(pb.ResetRequest(session_id="s"))
    zero = _round_trip(pb.ResetRequest(session_id="s", seed=0))
    assert isinstance(unset, pb.ResetRequest)
    assert isinstance(zero, pb.ResetRequest)
    assert not unset.HasField("seed")
    assert zero.HasField("seed")
    assert zero.seed == 0
    assert unset.SerializeToString() != zero.SerializeToString()


@pytest.mark.parametrize(
    ("message", "oneof", "member"),
    [
        (pb.Value(text="a"), "kind", "text"),
        (pb.Value(json="1"), "kind", "json"),
        (pb.Value(), "kind", None),
        (pb.Space(box=BOX), "kind", "box"),
        (pb.Space(), "kind", None),
        (pb.StepRequest(session_id="s", action=pb.Value(text="")), "act", "action"),
        (pb.StepRequest(session_id="s", actions=pb.AgentActions()), "act", "actions"),
        (pb.StepRequest(session_id="s"), "act", None),
        (pb.BatchItem(reset=pb.ResetRequest()), "request", "reset"),
        (pb.BatchItem(step=pb.StepRequest()), "request", "step"),
        (pb.BatchResult(state=pb.EnvState()), "result", "state"),
        (pb.BatchResult(error=pb.Error()), "result", "error"),
    ],
)
def test_oneof_member_survives_the_wire(message: Message, oneof: str, member: str | None) -> None:
    # Empty members (Value(text=""), AgentActions()) must still count as chosen.
    assert _round_trip(message).WhichOneof(oneof) == member


def test_nested_dict_space_fields() -> None:
    back = _round_trip(pb.Space(dict=NESTED_DICT))
    assert isinstance(back, pb.Space)
    inner = back.dict.spaces["inner"].dict
    assert set(inner.spaces) == {"text", "turn"}
    assert inner.spaces["text"].text.max_length == 256
    assert inner.spaces["text"].text.charset == "abc "
    assert inner.spaces["turn"].discrete.start == -1
    box = back.dict.spaces["box"].box
    assert list(box.low) == [-math.inf, 0.0]
    assert list(box.high) == [math.inf, 1.5]
    assert list(box.shape) == [2]
    assert box.dtype == "float32"


def test_agent_actions_map_fields() -> None:
    back = _round_trip(pb.StepRequest(session_id="s-1", actions=ACTIONS))
    assert isinstance(back, pb.StepRequest)
    assert dict(back.actions.actions) == {"player_0": pb.Value(text="yes"), "player_1": pb.Value(json="3")}
    assert decode_json(back.actions.actions["player_1"].json) == 3


def test_env_info_fields() -> None:
    back = _round_trip(INFO)
    assert isinstance(back, pb.EnvInfo)
    assert list(back.kinds) == [pb.ENV_KIND_AEC, pb.ENV_KIND_PARALLEL]
    assert [agent.agent for agent in back.default_spec.agents] == ["player_0", "player_1"]
    assert not back.default_spec.agents[1].HasField("observation_space")
    assert decode_json(back.default_spec.metadata_json) == {"is_parallelizable": True}


def _assert_same_types(actual: object, expected: object) -> None:
    """Assert equality where every nested value also has exactly the expected type."""
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        assert list(actual) == list(expected)
        for key, value in expected.items():
            _assert_same_types(actual[key], value)
    elif isinstance(expected, list):
        assert isinstance(actual, list)
        assert len(actual) == len(expected)
        for actual_item, expected_item in zip(actual, expected, strict=True):
            _assert_same_types(actual_item, expected_item)
    else:
        assert actual == expected


def test_info_types_survive_the_wire() -> None:
    info = {
        "won": False,
        "count": 0,
        "score": 0.0,
        "ratio": 1.0,
        "big": 2**62 + 1,
        "missing": None,
        "nested": {"moves": [1, 2.5, True, None, "e4"], "empty": {}, "none": []},
        "text": "naïve ✓",
    }
    state = pb.EnvState(agents=[pb.AgentState(agent="a", info_json=encode_json(info))])
    back = pb.EnvState.FromString(state.SerializeToString())
    _assert_same_types(decode_json(back.agents[0].info_json), info)


def test_empty_info_json_means_empty_dict() -> None:
    back = _round_trip(pb.AgentState(agent="a"))
    assert isinstance(back, pb.AgentState)
    assert back.info_json == ""
    assert decode_json(back.info_json) == {}
