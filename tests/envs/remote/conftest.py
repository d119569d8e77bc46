"""Fixtures of the remote env tests: an in-process server on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrlm.envs.server import EnvServer, serve
from tests.envs.remote.probe_env import PROBE_ID, register_probe_envs

#: What the shared test server hosts: a real env, the two toy games and the probe env.
HOSTED = ("mrlm/Math-v0", "mrlm-test/GuessWord-v0", "mrlm-test/GuessNumber-v0", PROBE_ID)


@pytest.fixture(scope="session", autouse=True)
def _probe_envs() -> None:
    """Register the probe env (and the toy games) for these tests, once they run."""
    register_probe_envs()


@pytest.fixture(scope="module")
def server() -> Iterator[EnvServer]:
    """A server on 127.0.0.1 with a port the OS picked, stopped after the module's tests."""
    running = serve(envs=HOSTED, host="127.0.0.1", port=0)
    try:
        yield running
    finally:
        running.stop(grace_s=0)


@pytest.fixture
def address(server: EnvServer) -> str:
    return server.address
