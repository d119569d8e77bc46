"""Clients over a list of servers: sessions dealt over them in turn, each kept on its server; a server that
goes away gives a clear error at once, and new sessions go to the servers that answer."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

import mrlm.envs
from mrlm.envs.remote import (
    Connection,
    RemoteEnv,
    RemoteVectorEnv,
    ServerList,
    ServerUnavailableError,
    parse_remote_id,
)
from mrlm.envs.remote.address import parse_addresses
from mrlm.envs.server import EnvServer, serve
from tests.envs.remote.conftest import HOSTED
from tests.envs.remote.probe_env import PROBE_ID

#: Longest a failure may take to be reported: a dead server must never make a client hang.
PROMPT_S = 5.0


@pytest.fixture
def servers() -> Iterator[list[EnvServer]]:
    """Two one-process servers on two ports."""
    running = [serve(envs=HOSTED, host="127.0.0.1", port=0) for _ in range(2)]
    try:
        yield running
    finally:
        for server in running:
            server.stop(grace_s=0)


def _listed(servers: list[EnvServer]) -> str:
    return ",".join(server.address for server in servers)


def test_addresses_parse_as_a_list_with_one_scheme() -> None:
    assert parse_addresses("grpcs://a:443, b:8443,[::1]") == [
        ("a:443", True),
        ("b:8443", True),
        ("[::1]:50051", True),
    ]
    assert parse_addresses(["a:1", "grpcs://b:2"]) == [("a:1", False), ("b:2", True)]
    remote = parse_remote_id("grpc://a:1,b/mrlm/Math-v0")
    assert (remote.targets, remote.address, remote.env_id) == (
        ["a:1", "b:50051"],
        "grpc://a:1,b:50051",
        "mrlm/Math-v0",
    )
    assert str(ServerList("grpc://a:1,b:2")) == "grpc://a:1,b:2"
    with pytest.raises(ValueError, match="lists several servers: a Connection dials one"):
        Connection("a:1,b:2")
    with pytest.raises(ValueError, match="an empty address"):
        parse_addresses("a:1,,b:2")


def test_each_list_starts_at_a_random_server_and_then_goes_round() -> None:
    addresses = ["grpc://a:1", "grpc://b:2", "grpc://c:3"]
    firsts = set()
    for _ in range(200):
        random.seed(0)  # as every rollout worker of a seeded run would: the start must not follow it
        listed = ServerList(",".join(addresses))
        turns = [listed.in_turn()[0] for _ in range(6)]
        start = addresses.index(turns[0])
        assert turns == [addresses[(start + step) % 3] for step in range(6)]
        assert listed.in_turn() == addresses[start:] + addresses[:start]  # the rest follow in order
        firsts.add(turns[0])
    # Processes given the same list do not all begin with its first server (each missing one has
    # a chance of (2/3)^200 here).
    assert firsts == set(addresses)


def test_sessions_are_dealt_over_the_servers_and_stay_there(servers: list[EnvServer]) -> None:
    envs = [mrlm.envs.make(f"grpc://{_listed(servers)}/{PROBE_ID}", max_turns=100) for _ in range(6)]
    try:
        assert [len(server.store) for server in servers] == [3, 3]
        homes = [env.connection.address for env in envs]
        assert homes == [homes[0], homes[1]] * 3 and homes[0] != homes[1]
        for index, env in enumerate(envs):
            env.reset(seed=index)
            for turn in range(30):
                assert env.step(f"{index}.{turn}")[0] == f"echo {index}.{turn}"
        assert [env.connection.address for env in envs] == homes
        assert [server.store.opened_total for server in servers] == [3, 3]
    finally:
        for env in envs:
            env.close()
    assert [len(server.store) for server in servers] == [0, 0]


def test_a_server_that_goes_away_fails_its_sessions_at_once_and_reset_moves_them(
    servers: list[EnvServer],
) -> None:
    listed = ServerList(_listed(servers), retries=1)
    first, second = RemoteEnv(listed, PROBE_ID, max_turns=100), RemoteEnv(listed, PROBE_ID, max_turns=100)
    try:
        first.reset(seed=0)
        second.reset(seed=1)
        gone = next(server for server in servers if f"grpc://{server.address}" == second.connection.address)
        alive = next(server for server in servers if server is not gone)
        gone.stop(grace_s=0)

        started = time.monotonic()
        with pytest.raises(ServerUnavailableError, match=f"Step on grpc://{gone.address} failed") as raised:
            second.step("anyone?")
        assert raised.value.code == "UNAVAILABLE" and time.monotonic() - started < PROMPT_S
        assert first.step("still here")[0] == "echo still here"

        observation, _ = second.reset(seed=1)  # the session was lost with its server: a new one, elsewhere
        assert observation.startswith("probe ")
        assert second.connection.address == f"grpc://{alive.address}"
        assert second.step("moved")[0] == "echo moved"
        for _ in range(2):  # new sessions skip the server that is down
            with RemoteEnv(listed, PROBE_ID) as fresh:
                assert fresh.connection.address == f"grpc://{alive.address}"
        assert len(alive.store) == 2
    finally:
        first.close()
        second.close()


def test_no_server_answering_is_one_clear_error(servers: list[EnvServer]) -> None:
    listed = _listed(servers)
    for server in servers:
        server.stop(grace_s=0)
    started = time.monotonic()
    with pytest.raises(ServerUnavailableError, match=rf"^no server of grpc://{listed} answered \(grpc://"):
        RemoteEnv(ServerList(listed, retries=1), PROBE_ID)
    assert time.monotonic() - started < PROMPT_S
    with pytest.raises(ServerUnavailableError, match="no server of"):
        mrlm.envs.make(f"grpc://{listed}/{PROBE_ID}")  # asks the list for the env's kind first


def test_the_listing_comes_from_a_server_that_answers(servers: list[EnvServer]) -> None:
    servers[0].stop(grace_s=0)
    entry = mrlm.envs.env_entry(f"grpc://{_listed(servers)}/{PROBE_ID}")
    assert entry.kinds == ("gymnasium",)


def test_a_vector_env_deals_its_sub_envs_over_the_servers(servers: list[EnvServer]) -> None:
    for stream in (False, True):
        spread = RemoteVectorEnv(_listed(servers), PROBE_ID, 5, stream=stream, max_turns=100)
        alone = RemoteVectorEnv(servers[0].address, PROBE_ID, 5, stream=stream, max_turns=100)
        try:
            dealt = [len(servers[0].store) - 5, len(servers[1].store)]  # 5 are the lone vector env's
            assert sorted(dealt) == [2, 3]
            assert spread.reset(seed=7)[0] == alone.reset(seed=7)[0]
            actions = tuple(f"sub-env {index}" for index in range(5))
            for _ in range(3):
                stepped = spread.step(actions)
                assert stepped[0] == tuple(f"echo {action}" for action in actions)
                assert list(stepped[1]) == [float(len(action)) for action in actions]
        finally:
            spread.close()
            alone.close()
        assert [len(server.store) for server in servers] == [0, 0]
