"""``mrlm-envs serve`` as a process: killed and restarted under its clients, stopped by SIGTERM."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from mrlm.envs.cli import main
from mrlm.envs.remote import (
    RemoteAECEnv,
    RemoteEnv,
    RemoteEnvArgumentError,
    ServerUnavailableError,
    SessionLostError,
)
from mrlm.envs.server import ServerConfig
from mrlm.envs.server.config import PROCESSES_PER_CORE, max_processes
from mrlm.proto.json_codec import encode_json
from tests.envs.remote.probe_env import PROBE_ID
from tests.envs.remote.spawn import start_server


@pytest.mark.slow
def test_clients_survive_a_server_kill_and_restart(tmp_path: Path) -> None:
    first = start_server(tmp_path / "first.log", "--envs", PROBE_ID)
    env = RemoteEnv(first.address, PROBE_ID)
    try:
        env.reset(seed=0)
        assert env.step("before")[0] == "echo before"
        first.kill()
        with pytest.raises(ServerUnavailableError, match=f"Step on {first.address} failed") as raised:
            env.step("during")
        assert raised.value.code == "UNAVAILABLE"

        second = start_server(tmp_path / "second.log", "--envs", PROBE_ID, port=first.port)
        try:
            env.connection.wait_ready(timeout_s=10)
            with pytest.raises(SessionLostError, match="server restarted"):
                env.step("after")  # the new server never heard of the old session
            observation, _ = env.reset(seed=0)  # ... so a reset opens a new one
            assert observation.startswith("probe ")
            assert env.step("after")[0] == "echo after"
        finally:
            env.close()
            assert second.terminate() == 0
    finally:
        env.close()
        if first.process.poll() is None:
            first.kill()


@pytest.mark.slow
def test_sigterm_finishes_calls_in_flight_and_closes_every_env(tmp_path: Path) -> None:
    log = tmp_path / "closed.log"
    server = start_server(tmp_path / "server.log", "--grace-s", "5")  # every registered env
    try:
        game = RemoteAECEnv(server.address, "mrlm-test/GuessWord-v0", rounds=1)  # served through --import
        game.reset(seed=0)
        game.step("pear")
        assert game.agent_selection == "player_1"
        slow = RemoteEnv(server.address, PROBE_ID, delay_s=1.0, close_log=str(log))
        idle = RemoteEnv(server.address, PROBE_ID, close_log=str(log))
        slow.reset(seed=0)
        idle.reset(seed=0)
        replies: list[object] = []
        in_flight = threading.Thread(target=lambda: replies.append(slow.step("last words")[0]))
        in_flight.start()
        time.sleep(0.4)  # the step is under way (it sleeps 1 s on the server)
        assert server.terminate() == 0
        in_flight.join(timeout=10)
        assert replies == ["echo last words"]
        assert log.read_text().count("closed") == 2
        assert "closed 3 sessions" in server.log_text()
        for client in (game, slow, idle):
            client.close()  # the server is gone: close() returns quietly
    finally:
        if server.process.poll() is None:
            server.kill()


def test_serve_refuses_unknown_env_ids_and_modules() -> None:
    with pytest.raises(SystemExit, match="unknown env id 'mrlm/Nope-v0'"):
        main(["serve", "--envs", "mrlm/Nope-v0", "--port", "0"])
    with pytest.raises(SystemExit, match="cannot import 'no_such_module'"):
        main(["serve", "--import", "no_such_module", "--port", "0"])


def test_serve_refuses_bad_allowances_and_stream_budgets(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(SystemExit, match=r"--allow-records-dir .*missing.* is not a directory"):
        main(["serve", "--allow-records-dir", str(missing), "--port", "0"])
    with pytest.raises(SystemExit, match=r"max_streams \(8\) must leave 12 of the handler_threads"):
        main(["serve", "--handler-threads", "16", "--max-streams", "8", "--port", "0"])


@pytest.mark.parametrize(
    "flag", ["--idle-timeout-s", "--call-timeout-s", "--disconnect-grace-s", "--grace-s"]
)
@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_serve_refuses_durations_that_are_not_finite_seconds(flag: str, value: str) -> None:
    # nan passed a `< 0` check (or none was made): a nan call deadline reached threading's wait.
    name = flag.removeprefix("--").replace("-", "_")
    with pytest.raises(
        SystemExit, match=rf"^mrlm-envs: {name} must be a finite number of seconds, at least 0"
    ):
        main(["serve", flag, value, "--port", "0"])


def test_serve_refuses_more_processes_than_the_cores_can_use() -> None:
    # Each process is a fresh interpreter: a typo such as --processes 100000 ran for minutes, and went
    # on starting processes after the SIGTERM that was meant to stop it.
    most = max_processes()
    assert most == PROCESSES_PER_CORE * len(os.sched_getaffinity(0))
    with pytest.raises(SystemExit, match=rf"^mrlm-envs: processes must be at most {most} \(4 per CPU core"):
        main(["serve", "--processes", str(most + 1), "--port", "0"])
    assert ServerConfig(processes=most).processes == most


def test_serve_refuses_a_url_where_a_host_name_goes() -> None:
    # A URL never equals the host of a client's URL, so it allowed nothing, silently.
    with pytest.raises(
        SystemExit, match=r"allow_url_host takes host names \(e\.g\. example\.org\), not URLs"
    ):
        main(["serve", "--allow-url-host", "https://example.org/", "--port", "0"])


def test_serve_names_an_unknown_log_level() -> None:
    with pytest.raises(
        SystemExit, match=r"^mrlm-envs serve: --log-level 'loud' is not one of debug, info, warning, error$"
    ):
        main(["serve", "--log-level", "loud", "--port", "0"])


def test_serve_lets_clients_name_files_only_under_allowed_directories(tmp_path: Path) -> None:
    allowed = tmp_path / "records"
    allowed.mkdir()
    (allowed / "math.jsonl").write_text(encode_json({"problem": "What is 5 + 6?", "answer": "11"}) + "\n")
    server = start_server(
        tmp_path / "server.log", "--envs", "mrlm/Math-v0", "--allow-records-dir", str(allowed)
    )
    try:
        with RemoteEnv(server.address, "mrlm/Math-v0", records="math.jsonl") as env:
            assert "5 + 6" in env.reset(seed=0)[0]
        with pytest.raises(RemoteEnvArgumentError, match="argument 'records' is a path outside"):
            RemoteEnv(server.address, "mrlm/Math-v0", records="/etc/hostname")
        assert server.terminate() == 0
    finally:
        if server.process.poll() is None:
            server.kill()
