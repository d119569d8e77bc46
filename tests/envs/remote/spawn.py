"""Running ``mrlm-envs serve`` in a subprocess, as a user would, for the kill/restart/signal tests."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: The module that registers the probe env and the toy games in the server process.
IMPORT = "tests.envs.remote.serve_probe"


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    address: str
    log: Path

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, like a crash or an OOM kill."""
        self.process.kill()
        self.process.wait(timeout=30)

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait for the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout_s)

    def log_text(self) -> str:
        return self.log.read_text()


def start_server(log: Path, *args: str, port: int = 0, env: dict[str, str] | None = None) -> ServerProcess:
    """Start ``mrlm-envs serve`` on 127.0.0.1 and wait for the line announcing its address."""
    command = [
        sys.executable, "-m", "mrlm.envs.cli", "serve",
        "--host", "127.0.0.1", "--port", str(port), "--import", IMPORT, *args,
    ]  # fmt: skip
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    with log.open("a") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 60.0)
    line = process.stdout.readline() if ready else ""
    match = re.search(r"on (\S+:\d+) ", line)
    if match is None:
        process.kill()
        raise AssertionError(f"the server did not start: {line!r}\n{log.read_text()[-3000:]}")
    return ServerProcess(process, match.group(1), log)
