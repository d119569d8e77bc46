"""Many sessions at once give exactly what local envs give with the same seeds, one call at a time
(threads) or batched (the vector client, over Batch and over StepStream)."""

from __future__ import annotations

import threading
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import data_equivalence

import mrlm.envs
from mrlm.envs.remote import Connection, RemoteEnv, RemoteVectorEnv, SessionLostError
from mrlm.envs.remote.coalesce import Coalescer
from mrlm.envs.server import EnvServer
from mrlm.proto.v1 import env_pb2 as pb
from tests.envs.remote.probe_env import PROBE_ID

SESSIONS = 200
THREADS = 8


def _episode(env: Any, seed: int, answer: str | None) -> list[Any]:
    """Reset with ``seed``, answer wrong once, then ``answer`` (the right one, when known)."""
    steps: list[Any] = [env.reset(seed=seed)]
    for reply in ("\\boxed{-1}", f"\\boxed{{{answer}}}"):
        steps.append(env.step(reply))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


@pytest.mark.parametrize("coalesce", [False, True], ids=["unary", "coalesced"])
def test_200_concurrent_sessions_match_local_runs(server: EnvServer, coalesce: bool) -> None:
    kwargs: dict[str, Any] = {"max_turns": 2}
    local = mrlm.envs.make("mrlm/Math-v0", **kwargs)
    answers, expected = [], []
    for seed in range(SESSIONS):
        local.reset(seed=seed)
        answers.append(str(local.unwrapped.task.answer))
        expected.append(_episode(local, seed, answers[-1]))

    results: list[list[Any] | None] = [None] * SESSIONS
    errors: list[BaseException] = []
    all_open = threading.Barrier(THREADS + 1)

    def drive(thread: int, connection: Connection) -> None:
        seeds = range(thread, SESSIONS, THREADS)
        envs = []
        try:
            envs = [RemoteEnv(connection, "mrlm/Math-v0", **kwargs) for _ in seeds]
            all_open.wait(timeout=60)
            all_open.wait(timeout=60)  # the main thread counts the sessions in between
            for seed, env in zip(seeds, envs, strict=True):
                results[seed] = _episode(env, seed, answers[seed])
        except BaseException as error:
            errors.append(error)
            all_open.abort()
        finally:
            for env in envs:
                env.close()

    with Connection(server.address) as connection:
        batch_sizes: list[int] = []
        if coalesce:  # count what goes over the wire

            def send(request: pb.BatchRequest) -> pb.BatchResponse:
                batch_sizes.append(len(request.items))
                return connection.batch(request)

            connection.coalescer = Coalescer(send, connection.address)
        threads = [threading.Thread(target=drive, args=(i, connection)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        all_open.wait(timeout=60)
        open_sessions = len(server.store)
        all_open.wait(timeout=60)
        for thread in threads:
            thread.join(timeout=120)
    assert not errors, errors
    assert open_sessions == SESSIONS
    if coalesce:  # every reset and step went in a batch, and concurrent ones shared batches
        assert sum(batch_sizes) == sum(len(steps) for steps in expected)
        assert len(batch_sizes) < sum(batch_sizes)
    assert sum(1 for steps in expected if steps[-1][1] == 1.0) > SESSIONS // 2  # many right answers
    for seed in range(SESSIONS):
        assert data_equivalence(results[seed], expected[seed], exact=True), seed
    assert len(server.store) == 0


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
def test_vector_client_matches_a_local_sync_vector_env(server: EnvServer, stream: bool) -> None:
    count = 6
    kwargs: dict[str, Any] = {"level": 1, "max_turns": 2}
    local = gymnasium.vector.SyncVectorEnv([lambda: mrlm.envs.make("mrlm/Math-v0", **kwargs)] * count)
    remote = RemoteVectorEnv(server.address, "mrlm/Math-v0", count, stream=stream, **kwargs)
    try:
        assert remote.single_observation_space == local.single_observation_space
        assert remote.metadata["autoreset_mode"] == local.metadata["autoreset_mode"]
        assert data_equivalence(remote.reset(seed=40), local.reset(seed=40), exact=True)
        actions = [tuple(f"\\boxed{{{(step * count + i) % 3}}}" for i in range(count)) for step in range(5)]
        for action in actions:  # episodes end at different steps: sub-envs autoreset on the next one
            got, want = remote.step(action), local.step(action)
            assert data_equivalence(got, want, exact=True), (got, want)
        assert len(set(remote.session_ids)) == count == len(server.store)
    finally:
        remote.close()
        local.close()
    assert len(server.store) == 0


def test_a_coalescing_connection_reports_each_call_s_own_error(server: EnvServer) -> None:
    with Connection(server.address, coalesce=True) as connection:
        kept, dropped = RemoteEnv(connection, PROBE_ID), RemoteEnv(connection, PROBE_ID)
        kept.reset(seed=0)
        dropped.reset(seed=0)
        connection.call(
            "CloseSession", pb.CloseSessionRequest(session_id=dropped.session_id), idempotent=True
        )
        outcomes: dict[str, object] = {}

        def step(name: str, env: RemoteEnv) -> None:
            try:
                outcomes[name] = env.step(name)[0]
            except SessionLostError as error:
                outcomes[name] = error

        threads = [
            threading.Thread(target=step, args=pair) for pair in (("kept", kept), ("dropped", dropped))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert outcomes["kept"] == "echo kept"
        assert isinstance(outcomes["dropped"], SessionLostError) and outcomes["dropped"].call == "Step"
        assert dropped.reset(seed=0)[0].startswith("probe ")  # the lost session is replaced
        kept.close()
        dropped.close()
