"""The server always answers: health watches, idle streams, clients that die, deep JSON and a SIGTERM
during a long env call never leave it hung, and health checks answer after each."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mrlm.envs.remote import RemoteEnv
from mrlm.envs.server import serve
from mrlm.envs.server.health import MAX_WATCHERS
from mrlm.envs.server.payload import MAX_DEPTH
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID
from tests.envs.remote.spawn import ROOT, start_server

#: A reply that takes longer than this counts as a hang.
PROMPT_S = 5.0


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _check_health(address: str, expected: int = health_pb2.HealthCheckResponse.SERVING) -> None:
    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=PROMPT_S)
    assert reply.status == expected


def _probe_round_trip(address: str) -> None:
    """A normal session: open, reset, step, close, each answered promptly."""
    with grpc.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvServiceStub(channel)
        session = stub.OpenSession(pb.OpenSessionRequest(env_id=PROBE_ID), timeout=PROMPT_S).session_id
        stub.Reset(pb.ResetRequest(session_id=session, seed=0), timeout=PROMPT_S)
        step = stub.Step(pb.StepRequest(session_id=session, action=pb.Value(text="hi")), timeout=PROMPT_S)
        assert step.state.agents[0].observation.text == "echo hi"
        stub.CloseSession(pb.CloseSessionRequest(session_id=session), timeout=PROMPT_S)


def test_300_health_watches_opened_and_cancelled_leave_the_server_answering(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server.log", "--envs", PROBE_ID, "--grace-s", "1")
    try:
        with grpc.insecure_channel(server.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            watches = [health.Watch(health_pb2.HealthCheckRequest(service="")) for _ in range(300)]
            first = next(watches[-1])  # every watch is answered at once, followed or not
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            for watch in watches:
                watch.cancel()
        _check_health(server.address)
        _probe_round_trip(server.address)
        started = time.monotonic()
        assert server.terminate(timeout_s=PROMPT_S + 1) == 0
        assert time.monotonic() - started < PROMPT_S
    finally:
        if server.process.poll() is None:
            server.kill()


def test_watches_past_the_followers_are_answered_and_ended_and_followers_see_the_shutdown() -> None:
    server = serve(envs=(PROBE_ID,), port=0)
    channel = grpc.insecure_channel(server.address)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        watches = [health.Watch(health_pb2.HealthCheckRequest(), timeout=30) for _ in range(MAX_WATCHERS + 3)]
        assert all(next(watch).status == health_pb2.HealthCheckResponse.SERVING for watch in watches)
        assert _wait_for(lambda: sum(watch.done() for watch in watches) == 3)
        following = [watch for watch in watches if not watch.done()]
        assert len(following) == MAX_WATCHERS
        _check_health(server.address)
        server.stop(grace_s=1.0)
        for watch in following:
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            assert list(watch) == []  # and the stream ends
    finally:
        channel.close()
        server.stop(grace_s=0)


class _IdleRequests:
    """A StepStream request iterator that sends nothing until released (bounded by a timeout)."""

    def __init__(self, release: threading.Event) -> None:
        self._release = release

    def __iter__(self) -> Iterator[pb.BatchRequest]:
        return self

    def __next__(self) -> pb.BatchRequest:
        self._release.wait(timeout=60)
        raise StopIteration


def test_70_idle_streams_do_not_starve_unary_calls_or_health() -> None:
    server = serve(envs=(PROBE_ID,), port=0)  # 64 handler threads, at most 32 streams
    budget = server.config.max_streams
    release = threading.Event()
    channel = grpc.insecure_channel(server.address)
    streams: list[Any] = []
    try:
        stub = env_pb2_grpc.EnvServiceStub(channel)
        streams = [stub.StepStream(_IdleRequests(release), timeout=60) for _ in range(70)]
        refused = lambda: [s for s in streams if s.done()]  # noqa: E731
        assert _wait_for(lambda: len(refused()) == 70 - budget, timeout_s=15)
        assert {s.code() for s in refused()} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert "--max-streams" in refused()[0].details()
        assert server.streams.open == budget
        _check_health(server.address)
        _probe_round_trip(server.address)
        stub.ListEnvs(pb.ListEnvsRequest(), timeout=PROMPT_S)
        for stream in streams:
            stream.cancel()
        assert _wait_for(lambda: server.streams.open == 0)
        with RemoteEnv(server.address, PROBE_ID) as env:  # a stream works again
            env.reset(seed=0)
            reply = next(stub.StepStream(iter([pb.BatchRequest()]), timeout=PROMPT_S))
            assert list(reply.results) == []
    finally:
        release.set()
        for stream in streams:
            stream.cancel()
        channel.close()
        server.stop(grace_s=0)


_CLIENT = """
import sys, time
from mrlm.envs.remote import RemoteEnv
envs = [RemoteEnv(sys.argv[1], sys.argv[2]) for _ in range(2)]
for env in envs:
    env.reset(seed=0)
print("ready", flush=True)
time.sleep(60)
"""


def test_the_sessions_of_a_killed_client_are_closed_within_seconds() -> None:
    server = serve(envs=(PROBE_ID,), port=0, disconnect_grace_s=0.5)  # idle expiry stays at 600 s
    client = subprocess.Popen(
        [sys.executable, "-c", _CLIENT, server.address, PROBE_ID],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdout is not None and client.stdout.readline().strip() == "ready"
        with RemoteEnv(server.address, PROBE_ID) as survivor:  # a client that stays connected
            survivor.reset(seed=0)
            assert len(server.store) == 3
            time.sleep(1.0)  # past the grace: connected clients keep their sessions
            assert len(server.store) == 3
            client.send_signal(signal.SIGKILL)
            client.wait(timeout=10)
            started = time.monotonic()
            assert _wait_for(lambda: len(server.store) == 1, timeout_s=10)
            assert time.monotonic() - started < 4.0
            assert survivor.step("still here")[0] == "echo still here"
        _check_health(server.address)
    finally:
        if client.poll() is None:
            client.kill()
        server.stop(grace_s=0)


def _terminate_during_a_step(server: Any, env: Any, action: str, running_s: float, within_s: float) -> None:
    """Start ``env.step(action)``, check health while it runs, SIGTERM the server: it must exit
    within ``within_s`` and the step must fail with UNAVAILABLE or CANCELLED."""
    errors: list[BaseException] = []

    def step() -> None:
        try:
            env.step(action)
        except BaseException as error:
            errors.append(error)

    stepping = threading.Thread(target=step, daemon=True)
    stepping.start()
    time.sleep(running_s)  # the call is under way on the server
    _check_health(server.address)  # answered while the env call runs
    assert stepping.is_alive()
    started = time.monotonic()
    assert server.terminate(timeout_s=30) == 0
    assert time.monotonic() - started < within_s  # the grace period, then closing, not the whole call
    stepping.join(timeout=5)
    assert errors and getattr(errors[0], "code", "") in ("UNAVAILABLE", "CANCELLED")


def test_sigterm_during_a_long_env_call_exits_after_the_grace_period(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server.log", "--envs", PROBE_ID, "--grace-s", "1")
    try:
        env = RemoteEnv(server.address, PROBE_ID, delay_s=30.0)
        env.reset(seed=0)
        _terminate_during_a_step(server, env, "slow", running_s=0.3, within_s=4.0)
        env.close()
    finally:
        if server.process.poll() is None:
            server.kill()


@pytest.mark.slow
def test_sigterm_during_a_long_sandbox_run_exits_after_the_grace_period(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server.log", "--envs", "mrlm/Code-v0", "--grace-s", "1")
    try:
        env = RemoteEnv(server.address, "mrlm/Code-v0")
        env.reset(seed=0)
        reply = "```python\nimport time\nwhile True:\n    time.sleep(0.01)\n```"
        # The program runs in the sandbox, up to its 10 s limit.
        _terminate_during_a_step(server, env, reply, running_s=1.0, within_s=5.0)
        env.close()
    finally:
        if server.process.poll() is None:
            server.kill()


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_negative_seed_is_invalid_argument_and_the_session_goes_on(address: str) -> None:
    # The wire's int64 carries one; no env takes it, so it is a refused argument, not an env failure.
    with grpc.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvServiceStub(channel)
        session = stub.OpenSession(pb.OpenSessionRequest(env_id=PROBE_ID), timeout=PROMPT_S).session_id
        with pytest.raises(grpc.RpcError) as raised:
            stub.Reset(pb.ResetRequest(session_id=session, seed=-5), timeout=PROMPT_S)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, raised.value.details()
        assert "seed must be >= 0, got -5" in raised.value.details()
        stub.Reset(pb.ResetRequest(session_id=session, seed=0), timeout=PROMPT_S)
        step = stub.Step(pb.StepRequest(session_id=session, action=pb.Value(text="hi")), timeout=PROMPT_S)
        assert step.state.agents[0].observation.text == "echo hi"


def test_deeply_nested_json_is_invalid_argument_everywhere(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvServiceStub(channel)
        for depth in (100_000, MAX_DEPTH + 1):
            with pytest.raises(grpc.RpcError) as raised:
                stub.OpenSession(
                    pb.OpenSessionRequest(env_id=PROBE_ID, kwargs_json=f'{{"delay_s": {_deep(depth)}}}'),
                    timeout=PROMPT_S,
                )
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "kwargs_json: JSON nested deeper than" in raised.value.details()
        session = stub.OpenSession(pb.OpenSessionRequest(env_id=PROBE_ID), timeout=PROMPT_S).session_id
        deep_options = f'{{"a": {_deep(100_000)}}}'
        with pytest.raises(grpc.RpcError) as raised:
            stub.Reset(pb.ResetRequest(session_id=session, options_json=deep_options), timeout=PROMPT_S)
        assert (
            raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            and "options_json" in raised.value.details()
        )
        batch = stub.Batch(
            pb.BatchRequest(
                items=[pb.BatchItem(reset=pb.ResetRequest(session_id=session, options_json=deep_options))]
            ),
            timeout=PROMPT_S,
        )
        assert batch.results[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        stub.Reset(pb.ResetRequest(session_id=session, seed=0), timeout=PROMPT_S)
        with pytest.raises(grpc.RpcError) as raised:
            stub.Step(
                pb.StepRequest(session_id=session, action=pb.Value(json=_deep(100_000))), timeout=PROMPT_S
            )
        assert (
            raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "the action" in raised.value.details()
        )
        step = stub.Step(pb.StepRequest(session_id=session, action=pb.Value(text="ok")), timeout=PROMPT_S)
        assert step.state.agents[0].observation.text == "echo ok"  # the session goes on
        stub.CloseSession(pb.CloseSessionRequest(session_id=session), timeout=PROMPT_S)
    _check_health(address)
