"""Where a layer is missing the sandbox says so (a warning, the report) and still contains programs;
a caller that demands isolation gets a clear error instead."""

from __future__ import annotations

import pytest

from mrlm.envs.sandbox import IsolationUnavailable, IsolationWarning, Limits, Sandbox, Status
from mrlm.envs.sandbox.forkserver.plan import SWITCHABLE
from tests.envs.sandbox.conftest import assert_healthy

LIMITS = Limits(wall_time_s=1.0, cpu_time_s=1.0)
DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1000)
    os._exit(0)
print('started')
"""
NETWORK = """
import socket
try:
    socket.create_connection(('127.0.0.1', 9), timeout=0.5)
    print('reached')
except OSError as error:
    print(type(error).__name__)
"""


@pytest.mark.parametrize("layer", SWITCHABLE)
def test_each_layer_can_be_missing(layer: str) -> None:
    with Sandbox(LIMITS, workers=1, disable=[layer]) as sandbox:
        with pytest.warns(IsolationWarning, match=layer):
            report = sandbox.isolation
        assert not getattr(report, layer)
        assert any(warning.startswith(layer) for warning in report.warnings)
        assert sandbox.run("print(6 * 7)").stdout == "42\n"
        timed_out = sandbox.run("while True:\n    pass\n")
        assert timed_out.status is Status.TIMEOUT
        daemon = sandbox.run(DAEMON)
        assert (daemon.status, daemon.stdout) == (Status.OK, "started\n"), daemon
        if report.network_namespace or report.seccomp:
            assert sandbox.run(NETWORK).stdout != "reached\n"
        assert_healthy(sandbox)


def test_strongest_is_available_here_or_refused_clearly(sandbox: Sandbox) -> None:
    if sandbox.isolation.missing("strongest"):
        with pytest.raises(IsolationUnavailable, match="require='strongest' needs"):
            Sandbox(LIMITS, workers=1, require="strongest")
        return
    with Sandbox(LIMITS, workers=1, require="strongest") as strongest:
        assert strongest.isolation.missing("strongest") == ()
        assert strongest.run("print(1)").ok


def test_demanding_a_disabled_layer_raises() -> None:
    with pytest.warns(IsolationWarning), pytest.raises(IsolationUnavailable, match="pid_namespace"):
        Sandbox(LIMITS, workers=1, require="namespaces", disable=["pid_namespace"])
