"""Several server processes on one port (``--processes``): sessions stay on their process, limits hold per
process, errors come in one line, and no process outlives the server."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from mrlm.envs.cli import main
from mrlm.envs.remote import RemoteEnv, ServerBusyError
from mrlm.envs.server import ProcessGroup, ServerConfig, serve, start_processes
from mrlm.envs.server import processes as processes_module
from mrlm.envs.server.processes import Interrupted
from mrlm.proto.v1 import env_pb2 as pb
from mrlm.proto.v1 import env_pb2_grpc
from tests.envs.remote.probe_env import PROBE_ID
from tests.envs.remote.spawn import IMPORT, ROOT

#: Connections opened at most while looking for one that reaches a given process: the kernel picks a
#: process per connection at random, so missing one process 64 times has odds of 2**-64.
TRIES = 64


def _config(**fields: object) -> ServerConfig:
    settings: dict[str, object] = {
        "envs": (PROBE_ID,), "host": "127.0.0.1", "port": 0, "processes": 2, "grace_s": 1.0,
    }  # fmt: skip
    settings.update(fields)
    return ServerConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def group() -> Iterator[ProcessGroup]:
    """Two server processes sharing a port, hosting the probe env."""
    running = start_processes(_config(), imports=(IMPORT,))
    try:
        yield running
    finally:
        running.stop()


def _process_of(session_id: str) -> str:
    """The instance tag a session id starts with: one per server process."""
    return session_id.partition("_")[0]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pids: list[int], timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if _alive(pid)]


def test_sessions_of_many_clients_stay_on_their_process(group: ProcessGroup) -> None:
    clients: list[RemoteEnv] = []
    try:
        while len({_process_of(c.session_id) for c in clients}) < 2 or len(clients) < 8:
            assert len(clients) < TRIES, "every connection reached the same process"
            clients.append(RemoteEnv(group.address, PROBE_ID, max_turns=200))
        failures: list[BaseException] = []

        def play(index: int, env: RemoteEnv) -> None:
            try:
                session = env.session_id
                observation, info = env.reset(seed=index)
                assert observation == f"probe {info['number']}"
                for turn in range(100):  # any call reaching the other process would find no session
                    action = f"client {index} turn {turn}"
                    observation, reward, terminated, truncated, _ = env.step(action)
                    assert (observation, reward, terminated, truncated) == (
                        f"echo {action}",
                        float(len(action)),
                        False,
                        False,
                    )
                assert env.session_id == session
            except BaseException as error:
                failures.append(error)

        threads = [threading.Thread(target=play, args=pair) for pair in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not failures, failures[0]
    finally:
        for client in clients:
            client.close()


def test_a_call_reaching_another_process_is_refused_clearly(group: ProcessGroup) -> None:
    home = RemoteEnv(group.address, PROBE_ID)
    channels: list[grpc.Channel] = []
    try:
        home.reset(seed=0)
        for _ in range(TRIES):  # a connection of its own, until one reaches the other process
            channel = grpc.insecure_channel(group.address, options=[("grpc.use_local_subchannel_pool", 1)])
            channels.append(channel)
            stub = env_pb2_grpc.EnvServiceStub(channel)
            other = stub.OpenSession(pb.OpenSessionRequest(env_id=PROBE_ID), timeout=10).session_id
            if _process_of(other) != _process_of(home.session_id):
                break
        else:
            pytest.fail("every connection reached the same process")
        step = pb.StepRequest(session_id=home.session_id, action=pb.Value(text="lost?"))
        with pytest.raises(grpc.RpcError) as raised:
            stub.Step(step, timeout=10)
        assert raised.value.code() == grpc.StatusCode.NOT_FOUND
        assert re.search(
            rf"opened on another server process \(instance {_process_of(home.session_id)}\) than the one "
            rf"this call reached \(instance {_process_of(other)}, process \d of 2, pid \d+\)",
            raised.value.details(),
        )
        assert home.step("still home")[0] == "echo still home"  # its own process still has it
    finally:
        home.close()
        for channel in channels:
            channel.close()


def test_limits_hold_per_process() -> None:
    """--max-sessions 1 with 2 processes: two sessions in all, one on each process."""
    with start_processes(_config(max_sessions=1), imports=(IMPORT,)) as capped:
        opened: list[RemoteEnv] = []
        try:
            refusals: list[str] = []
            for _ in range(TRIES):
                try:
                    opened.append(RemoteEnv(capped.address, PROBE_ID))
                except ServerBusyError as error:
                    refusals.append(str(error))
                if len(opened) == 2 and refusals:
                    break
            assert len(opened) == 2 and refusals
            assert all("maximum of 1 sessions (--max-sessions)" in refusal for refusal in refusals)
            assert len({_process_of(env.session_id) for env in opened}) == 2
        finally:
            for env in opened:
                env.close()


@pytest.mark.slow
def test_a_process_that_dies_is_replaced() -> None:
    with start_processes(_config(), imports=(IMPORT,)) as group:
        first = group.pids
        os.kill(first[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while group.pids[0] in (0, first[0]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group.pids[0] not in (0, first[0]) and group.pids[1] == first[1]
        assert group.failure is None
        seen: set[str] = set()
        for _ in range(TRIES):  # both processes serve again
            with RemoteEnv(group.address, PROBE_ID) as env:
                assert env.reset(seed=0)[0].startswith("probe ")
                seen.add(_process_of(env.session_id))
            if len(seen) == 2:
                break
        assert len(seen) == 2
    assert _wait_gone([*first, *group.pids]) == []


def test_a_process_that_fails_to_start_is_reported_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(
        OSError, match=r"^server process \d: --tls-key '.*missing\.pem': No such file or directory$"
    ):
        start_processes(_config(tls_cert=str(missing), tls_key=str(missing)), imports=(IMPORT,))


def test_a_port_in_use_and_other_systems_are_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(
            SystemExit, match=rf"^mrlm-envs serve: cannot listen on 127\.0\.0\.1:{port}: the port is in use$"
        ):
            main(["serve", "--envs", PROBE_ID, "--processes", "2", "--port", str(port)])
    with pytest.raises(ValueError, match=r"serve\(\) runs one server in this process"):
        serve(_config())
    monkeypatch.setattr(processes_module.sys, "platform", "darwin")
    with pytest.raises(SystemExit, match="--processes above 1 needs Linux: on darwin"):
        main(["serve", "--envs", PROBE_ID, "--processes", "2", "--port", "0"])


# ``mrlm-envs serve --processes 2`` as a user runs it --------------------------------------------------


def _serve_cli(log: Path) -> tuple[subprocess.Popen[str], str, list[int]]:
    """Start the command in a session of its own (so that a Ctrl-C can reach its whole group)."""
    command = [
        sys.executable, "-m", "mrlm.envs.cli", "serve", "--host", "127.0.0.1", "--port", "0",
        "--import", IMPORT, "--envs", PROBE_ID, "--processes", "2", "--grace-s", "1",
    ]  # fmt: skip
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with log.open("a") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True,
            start_new_session=True,
        )  # fmt: skip
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 120.0)
    line = process.stdout.readline() if ready else ""
    match = re.search(r"serving 1 envs on (\S+:\d+) \(plaintext; 2 processes\)", line)
    if match is None:
        process.kill()
        raise AssertionError(f"the server did not start: {line!r}\n{log.read_text()[-3000:]}")
    return process, match.group(1), _children(process.pid)


def _children(pid: int) -> list[int]:
    return sorted(
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "how", ["SIGTERM to the command", "Ctrl-C to its process group", "SIGTERM to its process group"]
)
def test_the_command_stops_every_process(tmp_path: Path, how: str) -> None:
    process, address, children = _serve_cli(tmp_path / "server.log")
    try:
        assert len(children) >= 2  # the two servers (and multiprocessing's helper)
        env = RemoteEnv(address, PROBE_ID)
        env.reset(seed=0)
        if how == "SIGTERM to the command":
            process.send_signal(signal.SIGTERM)
        else:  # as a terminal, or a service manager stopping every process of the service
            os.killpg(process.pid, signal.SIGINT if how.startswith("Ctrl-C") else signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        env.close()  # the server is gone: close() returns quietly
        assert _wait_gone(children) == []
        log = (tmp_path / "server.log").read_text()
        assert "Traceback" not in log and "Starting another" not in log
        assert log.count("stopped; closed") == 2
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_killing_the_command_leaves_no_server_process(tmp_path: Path) -> None:
    process, _, children = _serve_cli(tmp_path / "server.log")
    try:
        process.kill()  # no chance to stop its children: they notice and stop by themselves
        process.wait(timeout=10)
        assert _wait_gone(children) == []
    finally:
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_stop_during_the_start_starts_no_more_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every process was started before the first was awaited, so a SIGTERM during the start of many
    # took effect only once all of them were up.
    stop = threading.Event()
    started: list[int] = []
    spawn = ProcessGroup._spawn

    def spawn_then_signal(self: ProcessGroup, index: int) -> Any:
        started.append(index)
        stop.set()  # the signal arrives while the first process starts
        return spawn(self, index)

    monkeypatch.setattr(ProcessGroup, "_spawn", spawn_then_signal)
    with pytest.raises(Interrupted, match=r"asked to stop while starting its processes \(1 of 3 started\)"):
        start_processes(_config(processes=3), imports=(IMPORT,), interrupt=stop)
    assert started == [0]
