"""The server's pure parts: the runner's deadlines, sessions closed exactly once, the store's limits."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest

from mrlm.envs.server.errors import RequestError
from mrlm.envs.server.runner import Abandoned, CallTimedOut, Runner
from mrlm.envs.server.sessions import Session, SessionStore


class FakeDriver:
    kind = "gymnasium"
    env = None

    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def _session() -> tuple[Session, FakeDriver]:
    driver = FakeDriver()
    return Session("fake/Env-v0", driver), driver  # type: ignore[arg-type]


def test_runner_returns_outcomes_in_order_with_errors_in_place() -> None:
    runner = Runner(2)
    outcomes, timed_out = runner.run(1.0, [lambda: 1, lambda: 1 / 0, lambda: 3])
    assert not timed_out
    assert outcomes[0] == 1 and isinstance(outcomes[1], ZeroDivisionError) and outcomes[2] == 3
    runner.shutdown()


def test_runner_gives_up_on_a_call_past_its_deadline_and_keeps_its_capacity() -> None:
    runner = Runner(1)
    release = threading.Event()
    late: list[Any] = []
    started = time.monotonic()
    outcomes, timed_out = runner.run(
        0.1, [lambda: "fast", lambda: release.wait(5) and "slow", lambda: "never"], on_abandon=late.append
    )
    assert timed_out and time.monotonic() - started < 1.0
    assert outcomes[0] == "fast"
    assert isinstance(outcomes[1], CallTimedOut) and isinstance(outcomes[2], Abandoned)
    # The only worker is stuck, yet a replacement serves the next call at once.
    assert runner.run(1.0, [lambda: "next"]) == (["next"], False)
    release.set()
    deadline = time.monotonic() + 5
    while not late and time.monotonic() < deadline:
        time.sleep(0.01)
    assert late == ["slow"]  # the late result went to on_abandon, not to the caller
    runner.shutdown()


def test_a_session_closes_its_env_once_after_the_running_call() -> None:
    session, driver = _session()
    inside, release = threading.Event(), threading.Event()
    results: list[Any] = []

    def wait_inside(_: object) -> bool:
        inside.set()
        return release.wait(5)

    def slow_call() -> None:
        results.append(session.call(wait_inside))

    worker = threading.Thread(target=slow_call)
    worker.start()
    assert inside.wait(5)
    assert session.idle_for(time.monotonic()) is None  # in use: never idle
    session.retire()
    assert driver.closed == 0  # not under the running call's feet
    with pytest.raises(RequestError) as raised:
        session.call(lambda _: None)
    assert raised.value.code == grpc.StatusCode.NOT_FOUND
    release.set()
    worker.join(5)
    assert results == [True] and driver.closed == 1
    session.retire()
    assert driver.closed == 1


def test_the_store_counts_sessions_being_opened_and_reaps_idle_ones() -> None:
    store = SessionStore(max_sessions=2)
    with store.slot():
        first, first_driver = _session()
        store.add(first)
        with pytest.raises(RequestError, match="maximum of 2 sessions"), store.slot(), store.slot():
            pass
    second, _ = _session()
    with store.slot():
        store.add(second)
    assert store.get(first.id) is first and len(store) == 2
    time.sleep(0.05)
    second.call(lambda _: None)  # used just now
    assert store.take_idle(idle_timeout_s=0.04) == [first]  # the store hands them out, unclosed
    assert first_driver.closed == 0
    with pytest.raises(RequestError, match="unknown session"):
        store.get(first.id)
    assert store.take_all() == [second] and len(store) == 0
    assert store.opened_total == 2


def test_closing_sessions_runs_on_workers_with_the_deadline() -> None:
    from mrlm.envs.server.catalog import Catalog
    from mrlm.envs.server.servicer import EnvServicer

    class StuckDriver(FakeDriver):
        def close(self) -> None:
            release.wait(5)
            super().close()

    release = threading.Event()
    store = SessionStore(max_sessions=4)
    servicer = EnvServicer(Catalog(["mrlm/Math-v0"], max_action_chars=10), store, Runner(2), 0.1)
    stuck, quick = StuckDriver(), FakeDriver()
    sessions = [Session("fake/Env-v0", stuck), Session("fake/Env-v0", quick)]  # type: ignore[arg-type]
    started = time.monotonic()
    assert servicer.close_sessions(sessions) == 1  # one close ran past the deadline ...
    assert time.monotonic() - started < 1.0 and quick.closed == 1  # ... and did not hold up the other
    release.set()
    deadline = time.monotonic() + 5
    while not stuck.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stuck.closed == 1
