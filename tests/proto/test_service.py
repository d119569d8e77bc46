"""The generated stub and servicer talk to each other over a real in-process gRPC server."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from mrlm.proto.json_codec import decode_json, encode_json
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc

TIMEOUT_S = 10.0

SPEC = pb.EnvSpec(
    env_id="echo",
    kind=pb.ENV_KIND_GYMNASIUM,
    observation_space=pb.Space(text=pb.TextSpace(max_length=64)),
    action_space=pb.Space(text=pb.TextSpace(max_length=64)),
)


def _echo(action: pb.Value) -> pb.EnvState:
    """The state of an env that observes back the action it was given."""
    return pb.EnvState(
        agents=[
            pb.AgentState(
                observation=action, reward=1.0, cumulative_reward=1.0, info_json=encode_json({"echoed": True})
            )
        ]
    )


class EchoServicer(env_pb2_grpc.EnvServiceServicer):
    """Hosts one env, "echo", with one session, "s-1"; leaves the other rpcs unimplemented.

    Method names are the rpc names, as the generated base class requires.
    """

    def ListEnvs(self, request: pb.ListEnvsRequest, context: Any) -> pb.ListEnvsResponse:  # noqa: N802
        info = pb.EnvInfo(
            env_id="echo", kinds=[pb.ENV_KIND_GYMNASIUM], description="Echoes.", default_spec=SPEC
        )
        return pb.ListEnvsResponse(envs=[info])

    def Step(self, request: pb.StepRequest, context: Any) -> pb.StepResponse:  # noqa: N802
        if request.session_id != "s-1":
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {request.session_id!r}")
        return pb.StepResponse(state=_echo(request.action))

    def StepStream(  # noqa: N802
        self, request_iterator: Iterable[pb.BatchRequest], context: Any
    ) -> Iterator[pb.BatchResponse]:
        for batch in request_iterator:
            results = []
            for item in batch.items:
                if item.step.session_id == "s-1":
                    results.append(pb.BatchResult(state=_echo(item.step.action)))
                else:
                    error = pb.Error(code=grpc.StatusCode.NOT_FOUND.value[0], message="unknown session")
                    results.append(pb.BatchResult(error=error))
            yield pb.BatchResponse(results=results)


@pytest.fixture(scope="module")
def stub() -> Iterator[env_pb2_grpc.EnvServiceStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    env_pb2_grpc.add_EnvServiceServicer_to_server(EchoServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    assert port > 0
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield env_pb2_grpc.EnvServiceStub(channel)
    finally:
        server.stop(grace=None)


def test_list_envs(stub: env_pb2_grpc.EnvServiceStub) -> None:
    response = stub.ListEnvs(pb.ListEnvsRequest(), timeout=TIMEOUT_S)
    assert [info.env_id for info in response.envs] == ["echo"]
    assert list(response.envs[0].kinds) == [pb.ENV_KIND_GYMNASIUM]
    assert response.envs[0].default_spec == SPEC


def test_step(stub: env_pb2_grpc.EnvServiceStub) -> None:
    request = pb.StepRequest(session_id="s-1", action=pb.Value(text="hello"))
    state = stub.Step(request, timeout=TIMEOUT_S).state
    assert len(state.agents) == 1
    agent = state.agents[0]
    assert agent.agent == ""
    assert agent.observation.text == "hello"
    assert agent.reward == 1.0
    assert decode_json(agent.info_json) == {"echoed": True}


def test_unknown_session_is_not_found(stub: env_pb2_grpc.EnvServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        stub.Step(pb.StepRequest(session_id="nope"), timeout=TIMEOUT_S)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert raised.value.details() == "unknown session 'nope'"


def test_unimplemented_rpc(stub: env_pb2_grpc.EnvServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        stub.Render(pb.RenderRequest(session_id="s-1"), timeout=TIMEOUT_S)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_step_stream_answers_each_batch_in_order(stub: env_pb2_grpc.EnvServiceStub) -> None:
    def step(session_id: str, text: str) -> pb.BatchItem:
        return pb.BatchItem(step=pb.StepRequest(session_id=session_id, action=pb.Value(text=text)))

    batches = [
        pb.BatchRequest(items=[step("s-1", "a"), step("gone", "b"), step("s-1", "c")]),
        pb.BatchRequest(items=[step("s-1", "d")]),
    ]
    responses = list(stub.StepStream(iter(batches), timeout=TIMEOUT_S))
    assert [[result.WhichOneof("result") for result in r.results] for r in responses] == [
        ["state", "error", "state"],
        ["state"],
    ]
    assert responses[0].results[1].error.code == grpc.StatusCode.NOT_FOUND.value[0]
    assert [r.state.agents[0].observation.text for r in responses[0].results if r.HasField("state")] == [
        "a",
        "c",
    ]
    assert responses[1].results[0].state.agents[0].observation.text == "d"
