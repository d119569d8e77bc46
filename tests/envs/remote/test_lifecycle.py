"""Sessions end when they should: idle expiry after a client vanishes, a call past its deadline,
graceful shutdown; and the standard health and reflection services answer."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from mrlm.envs.remote import Connection, RemoteDeadlineError, RemoteEnv, ServerUnavailableError
from mrlm.envs.server import SERVICE_NAME, EnvServer, serve
from mrlm.proto.json_codec import encode_json
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID


def _wait_for(condition: object, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _closed(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_vanished_client_s_session_is_reclaimed_by_idle_expiry(tmp_path: Path) -> None:
    log = tmp_path / "closed.log"
    with serve(envs=(PROBE_ID,), port=0, idle_timeout_s=0.5) as server:
        channel = grpc.insecure_channel(server.address)
        stub = env_pb2_grpc.EnvServiceStub(channel)
        opened = stub.OpenSession(
            pb.OpenSessionRequest(env_id=PROBE_ID, kwargs_json=encode_json({"close_log": str(log)})),
            timeout=10,
        )
        stub.Reset(pb.ResetRequest(session_id=opened.session_id, seed=0), timeout=10)
        stub.Step(pb.StepRequest(session_id=opened.session_id, action=pb.Value(text="half")), timeout=10)
        channel.close()  # mid-episode, without CloseSession

        busy = RemoteEnv(server.address, PROBE_ID, max_turns=100)  # a client that keeps acting stays
        busy.reset(seed=1)
        assert len(server.store) == 2
        start = time.monotonic()
        while time.monotonic() - start < 1.5:
            busy.step("still here")
            time.sleep(0.05)
        assert len(server.store) == 1 and _closed(log) == 1
        assert busy.step("alive")[0] == "echo alive"
        busy.close()


def test_a_call_past_the_server_deadline_fails_and_closes_its_session(tmp_path: Path) -> None:
    log = tmp_path / "closed.log"
    with serve(envs=(PROBE_ID,), port=0, call_timeout_s=0.3) as server:
        slow = RemoteEnv(server.address, PROBE_ID, delay_s=1.0, close_log=str(log))
        slow.reset(seed=0)
        started = time.monotonic()
        with pytest.raises(RemoteDeadlineError, match=r"longer than 0.3 s .*the session is closed") as raised:
            slow.step("zzz")
        assert time.monotonic() - started < 0.9
        assert raised.value.code == "DEADLINE_EXCEEDED" and server.address in str(raised.value)
        assert len(server.store) == 0
        with RemoteEnv(server.address, PROBE_ID) as quick:  # served while the stuck call still sleeps
            quick.reset(seed=0)
            assert quick.step("hi")[0] == "echo hi"
        assert _wait_for(lambda: _closed(log) == 1)  # closed once the stuck call returned
        assert slow.reset(seed=0)[0].startswith("probe ")  # a reset opens a new session
        assert len(server.store) == 1
        slow.close()


def test_a_call_past_the_client_deadline_is_a_deadline_error(server: EnvServer) -> None:
    before = len(server.store)
    with Connection(server.address, timeout_s=0.2) as connection:
        env = RemoteEnv(connection, PROBE_ID, delay_s=0.6)
        env.reset(seed=0)
        with pytest.raises(RemoteDeadlineError, match=r"Step on .* failed \(DEADLINE_EXCEEDED\)"):
            env.step("zzz")
        assert len(server.store) == before + 1  # the server knows nothing of the client's deadline ...
        env.close()
        assert len(server.store) == before  # ... so close() still releases the session


def test_graceful_shutdown_finishes_calls_in_flight_and_closes_every_env(tmp_path: Path) -> None:
    log = tmp_path / "closed.log"
    server = serve(envs=(PROBE_ID,), port=0)
    envs = [RemoteEnv(server.address, PROBE_ID, close_log=str(log), delay_s=0.4) for _ in range(3)]
    for env in envs:
        env.reset(seed=0)
    replies: list[object] = []
    in_flight = threading.Thread(target=lambda: replies.append(envs[0].step("last words")))
    in_flight.start()
    busy = server.store.get(envs[0].session_id)
    assert _wait_for(lambda: busy.idle_for(time.monotonic()) is None)  # the step is running
    server.stop(grace_s=5.0)
    in_flight.join(timeout=5)
    assert replies and replies[0][0] == "echo last words"  # type: ignore[index]
    assert _closed(log) == 3 and len(server.store) == 0
    with pytest.raises(ServerUnavailableError, match=server.address):
        envs[1].step("anyone?")
    for env in envs:
        env.close()  # never raises on a dead server


def test_health_reports_serving(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_service(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE_NAME),
        ]
        listing, described = list(stub.ServerReflectionInfo(iter(requests), timeout=10))
    names = {service.name for service in listing.list_services_response.service}
    assert {SERVICE_NAME, "grpc.health.v1.Health"} <= names and SERVICE_NAME == "mrlm.v1.EnvService"
    assert described.file_descriptor_response.file_descriptor_proto  # the .proto itself, serialized


def test_a_dropped_client_releases_its_session(server: EnvServer) -> None:
    before = len(server.store)
    env = RemoteEnv(server.address, PROBE_ID)
    env.reset(seed=0)
    assert len(server.store) == before + 1
    del env
    gc.collect()
    assert len(server.store) == before


def test_idempotent_calls_retry_while_the_server_is_down_and_steps_do_not() -> None:
    first = serve(envs=(PROBE_ID,), port=0)
    port = first.port
    with Connection(first.address, backoff_s=0.1, retries=6) as connection:
        env = RemoteEnv(connection, PROBE_ID)
        env.reset(seed=0)
        first.stop(grace_s=0)
        started = time.monotonic()
        with pytest.raises(ServerUnavailableError):
            env.step("nobody there")  # not retried: it fails at once
        assert time.monotonic() - started < 0.5
        restarted: list[EnvServer] = []
        later = threading.Timer(0.3, lambda: restarted.append(serve(envs=(PROBE_ID,), port=port)))
        later.start()
        try:
            listing = connection.list_envs()  # retried with backoff until the new server answers
            assert [info.env_id for info in listing] == [PROBE_ID]
        finally:
            later.join()
            env.close()
            for server in restarted:
                server.stop(grace_s=0)
