"""Bad requests get the status code the contract names, with a readable message; one failing env call
fails that call only, and the server keeps serving."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import grpc
import gymnasium
import pytest

import mrlm.envs
from mrlm.envs.registry import EnvArgumentError, UnknownEnvError
from mrlm.envs.remote import (
    Connection,
    RemoteAECEnv,
    RemoteArgumentError,
    RemoteEnv,
    RemoteEnvArgumentError,
    RemoteEnvError,
    RemoteEnvFailure,
    RemoteEpisodeError,
    RemoteParallelEnv,
    RemoteVectorEnv,
    ServerBusyError,
    SessionLostError,
    UnknownRemoteEnvError,
)
from mrlm.envs.server import EnvServer, serve
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID

TIMEOUT_S = 10.0


@pytest.fixture
def stub(address: str) -> Iterator[env_pb2_grpc.EnvServiceStub]:
    with grpc.insecure_channel(address) as channel:
        yield env_pb2_grpc.EnvServiceStub(channel)


def _open(stub: env_pb2_grpc.EnvServiceStub, env_id: str = PROBE_ID, kwargs: str = "") -> str:
    reply = stub.OpenSession(pb.OpenSessionRequest(env_id=env_id, kwargs_json=kwargs), timeout=TIMEOUT_S)
    return str(reply.session_id)


def _status(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as raised:
        call()  # type: ignore[operator]
    return raised.value.code(), raised.value.details()


def test_unknown_env_id_is_not_found_naming_the_hosted_ids(server: EnvServer) -> None:
    with pytest.raises(UnknownRemoteEnvError) as raised:
        RemoteEnv(server.address, "mrlm/Nope-v0")
    message = str(raised.value)
    assert server.address in message and "'mrlm/Nope-v0'" in message and "mrlm/Math-v0" in message
    assert isinstance(raised.value, UnknownEnvError) and raised.value.code == "NOT_FOUND"
    with pytest.raises(UnknownEnvError, match="does not host 'mrlm/Nope-v0'"):
        mrlm.envs.make(f"grpc://{server.address}/mrlm/Nope-v0")


def test_bad_kwargs_and_kinds_are_invalid_argument(address: str) -> None:
    with pytest.raises(RemoteEnvArgumentError, match="did you mean 'level'") as raised:
        RemoteEnv(address, "mrlm/Math-v0", levle=1)
    assert isinstance(raised.value, EnvArgumentError) and raised.value.code == "INVALID_ARGUMENT"
    with pytest.raises(RemoteEnvArgumentError, match=r"'max_turns' must be an int in \[1, 32\], got 0"):
        RemoteEnv(address, "mrlm/Math-v0", max_turns=0)  # refused by what clients may set
    with pytest.raises(RemoteEnvArgumentError, match="unknown math topic 'nope'"):
        RemoteEnv(address, "mrlm/Math-v0", topics=["nope"])  # allowed to clients, refused by the env
    with pytest.raises(RemoteEnvArgumentError, match="offered as gymnasium, not as aec"):
        RemoteAECEnv(address, "mrlm/Math-v0")
    with pytest.raises(ValueError, match="travel to the server as JSON"):
        RemoteEnv(address, "mrlm/Math-v0", records=[{1, 2}])


def test_malformed_json_is_invalid_argument(stub: env_pb2_grpc.EnvServiceStub) -> None:
    code, details = _status(lambda: _open(stub, kwargs="{level: 1}"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("kwargs_json: malformed JSON")
    code, details = _status(lambda: _open(stub, kwargs="[1]"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "expected a JSON object" in details
    session = _open(stub)
    reset = pb.ResetRequest(session_id=session, options_json="{nope")
    code, details = _status(lambda: stub.Reset(reset, timeout=TIMEOUT_S))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("options_json: malformed JSON")
    stub.Reset(pb.ResetRequest(session_id=session), timeout=TIMEOUT_S)
    step = pb.StepRequest(session_id=session, action=pb.Value(json='{"a": '))
    code, details = _status(lambda: stub.Step(step, timeout=TIMEOUT_S))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "the action is malformed" in details


def test_unknown_session_is_not_found(stub: env_pb2_grpc.EnvServiceStub, address: str) -> None:
    for call in (
        lambda: stub.Step(pb.StepRequest(session_id="nope", action=pb.Value(text="x")), timeout=TIMEOUT_S),
        lambda: stub.Reset(pb.ResetRequest(session_id="nope"), timeout=TIMEOUT_S),
        lambda: stub.Render(pb.RenderRequest(session_id="nope"), timeout=TIMEOUT_S),
        lambda: stub.CloseSession(pb.CloseSessionRequest(session_id="nope"), timeout=TIMEOUT_S),
    ):
        code, details = _status(call)
        assert code == grpc.StatusCode.NOT_FOUND and "unknown session 'nope'" in details
    env = RemoteEnv(address, PROBE_ID)
    stub.CloseSession(pb.CloseSessionRequest(session_id=env.session_id), timeout=TIMEOUT_S)  # behind its back
    with pytest.raises(SessionLostError, match=r"Reset on .* failed \(NOT_FOUND\): unknown session"):
        env.reset(seed=0)
    observation, _ = env.reset(seed=0)  # the next reset opens a new session
    assert observation.startswith("probe ")
    env.close()


def test_actions_of_the_wrong_form_are_invalid_argument(
    stub: env_pb2_grpc.EnvServiceStub, address: str
) -> None:
    session = _open(stub)
    stub.Reset(pb.ResetRequest(session_id=session, seed=1), timeout=TIMEOUT_S)
    per_agent = pb.StepRequest(session_id=session, actions=pb.AgentActions(actions={"a": pb.Value(text="x")}))
    code, details = _status(lambda: stub.Step(per_agent, timeout=TIMEOUT_S))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "Gymnasium session steps with one action" in details
    with RemoteEnv(address, PROBE_ID) as env:
        env.reset(seed=1)
        with pytest.raises(
            RemoteArgumentError, match=r"the action \(5\) is not in the action space"
        ) as raised:
            env.step(5)
        assert isinstance(raised.value, ValueError)
        assert env.step("fine")[0] == "echo fine"  # the session goes on

    with RemoteAECEnv(address, "mrlm-test/GuessWord-v0", rounds=1) as aec:
        aec.reset(seed=0)
        aec_session = aec.session_id
        parallel_form = pb.StepRequest(
            session_id=aec_session, actions=pb.AgentActions(actions={"player_0": pb.Value(text="x")})
        )
        code, details = _status(lambda: stub.Step(parallel_form, timeout=TIMEOUT_S))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "one agent at a time" in details
        with pytest.raises(RemoteArgumentError, match="'player_0', which needs an action"):
            aec.step(None)
        aec.step("pear")
        aec.step("pear")  # one round: both agents are now done, and must be stepped with None
        assert aec.terminations == {"player_0": True, "player_1": True}
        with pytest.raises(RemoteArgumentError, match="step it with no action"):
            aec.step("pear")
        aec.step(None)

    with RemoteParallelEnv(address, "mrlm-test/GuessNumber-v0") as parallel:
        parallel.reset(seed=0)
        one_action = pb.StepRequest(session_id=parallel.session_id, action=pb.Value(text="3"))
        code, details = _status(lambda: stub.Step(one_action, timeout=TIMEOUT_S))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "every live agent at once" in details
        with pytest.raises(RemoteArgumentError, match=r"missing \['player_1'\], not live \['ghost'\]"):
            parallel.step({"player_0": "3", "ghost": "4"})
        assert set(parallel.step({"player_0": "3", "player_1": "4"})[1]) == {"player_0", "player_1"}


def test_a_parallel_step_with_a_key_that_is_no_agent_name_is_refused_as_locally(address: str) -> None:
    # The wire names agents by str: such a key used to fail in protobuf with a bare TypeError.
    actions: dict[Any, str] = {1: "3", "player_0": "3", "player_1": "4"}
    local = mrlm.envs.make("mrlm-test/GuessNumber-v0")
    local.reset(seed=0)
    with pytest.raises(ValueError, match="not live") as local_error:
        local.step(actions)
    with RemoteParallelEnv(address, "mrlm-test/GuessNumber-v0") as parallel:
        parallel.reset(seed=0)
        with pytest.raises(ValueError, match=r"missing \[\], not live \[1\]") as remote_error:
            parallel.step(actions)
        assert str(remote_error.value) == str(local_error.value)
        with pytest.raises(ValueError, match=r"missing \['player_1'\], not live \[None\]"):
            parallel.step({None: "3", "player_0": "3"})  # type: ignore[dict-item]
        assert set(parallel.step({"player_0": "3", "player_1": "4"})[1]) == {"player_0", "player_1"}


@pytest.mark.parametrize("stream", [False, True])
def test_a_closed_vector_env_says_it_is_closed_as_a_closed_env_does(address: str, stream: bool) -> None:
    single = RemoteEnv(address, "mrlm/Math-v0")
    single.reset(seed=0)
    single.close()
    with pytest.raises(RemoteEnvError) as single_error:
        single.step("1")
    vector = RemoteVectorEnv(address, "mrlm/Math-v0", num_envs=2, stream=stream)
    vector.reset(seed=0)
    vector.close()
    # Not a ServerUnavailableError from the closed channel or stream: the server is fine.
    for call in (lambda: vector.step(["1", "2"]), lambda: vector.reset(seed=0)):
        with pytest.raises(RemoteEnvError) as raised:
            call()
        assert type(raised.value) is RemoteEnvError
        assert str(raised.value) == str(single_error.value)
        assert str(raised.value).endswith(" is closed")


def test_steps_outside_an_episode_are_failed_precondition(address: str) -> None:
    with RemoteEnv(address, "mrlm/Math-v0") as env:
        with pytest.raises(RemoteEpisodeError, match="before the first reset"):
            env.step("1")
        env.reset(seed=0)
        assert env.step("\\boxed{1}")[2] is True
        with pytest.raises(RemoteEpisodeError, match="the episode is over"):
            env.step("1")


def test_an_env_raising_fails_that_call_only(address: str) -> None:
    with RemoteEnv(address, PROBE_ID) as failing, RemoteEnv(address, PROBE_ID) as other:
        failing.reset(seed=0)
        other.reset(seed=0)
        with pytest.raises(RemoteEnvFailure, match="the env raised RuntimeError: boom requested") as raised:
            failing.step("boom")
        assert raised.value.code == "INTERNAL" and failing.session_id in str(raised.value)
        assert other.step("still here")[0] == "echo still here"
        assert failing.reset(seed=1)[0].startswith("probe ")  # the failing session itself goes on
        assert failing.step("ok")[1] == 2.0


@pytest.mark.parametrize("options", [{"level": 9}, {"bogus": 1}])
def test_reset_options_the_env_refuses_are_invalid_argument_as_locally(address: str, options: dict) -> None:
    local = gymnasium.make("mrlm/Math-v0")
    with pytest.raises(ValueError, match=r"level|bogus") as refused_locally:
        local.reset(seed=0, options=options)
    with RemoteEnv(address, "mrlm/Math-v0") as remote:
        with pytest.raises(RemoteArgumentError) as refused:
            remote.reset(seed=0, options=options)
        assert refused.value.code == "INVALID_ARGUMENT"
        assert f"the env refused the reset options: {refused_locally.value}" in str(refused.value)
        assert remote.reset(seed=0)[0] == local.reset(seed=0)[0]  # the session goes on


def test_oversized_actions_and_messages_are_refused() -> None:
    with (
        serve(envs=(PROBE_ID,), port=0, max_action_chars=100, max_message_bytes=64 * 1024) as server,
        RemoteEnv(server.address, PROBE_ID) as env,
    ):
        env.reset(seed=0)
        with pytest.raises(RemoteArgumentError, match="101 characters, over the server's limit of 100"):
            env.step("x" * 101)
        with pytest.raises(ServerBusyError) as raised:
            env.step("x" * 100_000)
        assert raised.value.code == "RESOURCE_EXHAUSTED"
        assert env.step("x" * 100)[1] == 100.0  # the server and the session are fine


def test_the_session_limit_is_resource_exhausted() -> None:
    with serve(envs=(PROBE_ID,), port=0, max_sessions=2) as server:
        first, second = RemoteEnv(server.address, PROBE_ID), RemoteEnv(server.address, PROBE_ID)
        with pytest.raises(ServerBusyError, match="maximum of 2 sessions"):
            RemoteEnv(server.address, PROBE_ID)
        first.close()
        third = RemoteEnv(server.address, PROBE_ID)
        assert len(server.store) == 2
        second.close()
        third.close()
        assert len(server.store) == 0


def test_batch_items_fail_alone_and_run_in_order_per_session(stub: env_pb2_grpc.EnvServiceStub) -> None:
    good, other = _open(stub), _open(stub)

    def step(session: str, text: str) -> pb.BatchItem:
        return pb.BatchItem(step=pb.StepRequest(session_id=session, action=pb.Value(text=text)))

    items = [
        pb.BatchItem(reset=pb.ResetRequest(session_id=good, seed=4)),
        pb.BatchItem(reset=pb.ResetRequest(session_id=other, options_json="{bad")),
        step(good, "a"),
        step("nope", "b"),
        step(good, "boom"),
        pb.BatchItem(),
        step(good, "c"),
    ]
    results = stub.Batch(pb.BatchRequest(items=items), timeout=TIMEOUT_S).results
    kinds = [result.WhichOneof("result") for result in results]
    assert kinds == ["state", "error", "state", "error", "error", "error", "state"]
    codes = [result.error.code for result in results if result.HasField("error")]
    expected = [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INTERNAL]
    assert codes == [code.value[0] for code in [*expected, grpc.StatusCode.INVALID_ARGUMENT]]
    assert results[2].state.agents[0].observation.text == "echo a"
    assert results[6].state.agents[0].observation.text == "echo c"
    assert "boom requested" in results[4].error.message


def test_step_stream_answers_each_batch_in_order(stub: env_pb2_grpc.EnvServiceStub) -> None:
    session = _open(stub)
    batches = [
        pb.BatchRequest(items=[pb.BatchItem(reset=pb.ResetRequest(session_id=session, seed=0))]),
        *(
            pb.BatchRequest(
                items=[pb.BatchItem(step=pb.StepRequest(session_id=session, action=pb.Value(text=word)))]
            )
            for word in ("one", "two")
        ),
    ]
    replies = list(stub.StepStream(iter(batches), timeout=TIMEOUT_S))
    observations = [reply.results[0].state.agents[0].observation.text for reply in replies]
    assert observations[1:] == ["echo one", "echo two"] and observations[0].startswith("probe ")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"timeout_s": float("nan")}, "timeout_s must be a finite number of seconds > 0, got nan"),
        ({"timeout_s": float("inf")}, "timeout_s must be a finite number of seconds > 0, got inf"),
        ({"timeout_s": -1.0}, "timeout_s must be a finite number of seconds > 0, got -1.0"),
        ({"retries": -1}, "retries must be at least 0, got -1"),
        ({"backoff_s": float("nan")}, "backoff_s must be a finite number of seconds >= 0, got nan"),
        ({"max_message_bytes": 0}, "max_message_bytes must be at least 4096, got 0"),
        (
            {"keepalive_s": float("inf")},
            "keepalive_s must be a finite number of seconds > 0, or None, got inf",
        ),
        ({"keepalive_s": 0.0}, "keepalive_s must be a finite number of seconds > 0, or None, got 0.0"),
    ],
)
def test_connection_settings_out_of_range_are_refused_when_made(
    address: str, setting: dict[str, float], message: str
) -> None:
    # Each was accepted: any deadline but a positive finite one failed every call with DEADLINE_EXCEEDED
    # (an infinite one too), negative retries ended in AssertionError("unreachable"), a tiny message
    # limit in RESOURCE_EXHAUSTED on the first reply, an infinite keepalive in OverflowError.
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Connection(address, **setting)  # type: ignore[arg-type]
    with Connection(address, timeout_s=30.0, retries=0, backoff_s=0.0) as connection:  # the edges are fine
        env = RemoteEnv(connection, PROBE_ID)
        env.reset(seed=0)
        env.close()
