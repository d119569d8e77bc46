"""One worker process as the caller sees it: start it, send it requests, notice when it is gone.

The worker is a fresh interpreter started with subprocess (fork and exec), never a fork of the
caller: the caller may run threads (a gRPC server does), and forking a threaded process is unsafe.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mrlm.envs.sandbox import protocol
from mrlm.envs.sandbox.forkserver.plan import WorkerConfig

BOOT = Path(__file__).resolve().parent / "forkserver" / "boot.py"
#: The worker's environment: nothing of the caller's leaks in (and -I ignores PYTHON* anyway).
_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class WorkerError(RuntimeError):
    """The worker could not start, died, or stopped answering."""


class WorkerGone(WorkerError):
    """The worker exited (or was killed); a new one can take its place."""


class WorkerProcess:
    """A started worker. Not thread-safe: one caller thread uses it at a time.

    Args:
        python: the interpreter to run the worker with.
        config: the worker's configuration.
    """

    def __init__(self, python: str, config: WorkerConfig) -> None:
        self.config = config
        self._process = subprocess.Popen(
            [python, "-I", "-S", str(BOOT), json.dumps(config.to_json())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,  # the caller's terminal signals (Ctrl-C) are the caller's business
            cwd="/",
            env=_ENVIRONMENT,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._requests = self._process.stdin.fileno()
        self._replies = self._process.stdout.fileno()
        self.server_pid: int | None = None

    @property
    def pid(self) -> int:
        """The host pid of the worker's first process (killing it ends the whole worker)."""
        return self._process.pid

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        """The worker's start-up report: ``{"layers": ..., "warnings": ..., "pid": ...}``.

        Raises:
            WorkerError: the worker failed to start, with its reason.
        """
        try:
            ready = protocol.read_message(self._replies, time.monotonic() + timeout)
        except protocol.ChannelClosed:
            self.kill()
            raise WorkerError(
                f"the worker exited during start-up (exit status {self._process.returncode})"
            ) from None
        except protocol.ChannelTimeout:
            self.kill()
            raise WorkerError(f"the worker did not start within {timeout:g} s") from None
        if not ready.get("ready"):
            self.kill()
            raise WorkerError(f"the worker could not start: {ready.get('error', 'no reason given')}")
        self.server_pid = int(ready["pid"])
        return ready

    def alive(self) -> bool:
        return self._process.poll() is None

    def call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait at most ``timeout`` seconds for its reply.

        Raises:
            WorkerGone: the worker died before or while answering.
            WorkerError: it did not answer in time (it has been killed).
        """
        try:
            protocol.write_message(self._requests, request)
            return protocol.read_message(self._replies, time.monotonic() + timeout)
        except (BrokenPipeError, protocol.ChannelClosed):
            self.kill()
            raise WorkerGone("the worker died") from None
        except protocol.ChannelTimeout:
            self.kill()
            raise WorkerError(f"the worker did not answer within {timeout:g} s") from None
        except BaseException:
            # Anything else (an interrupt, an error while waiting) may leave this request's reply
            # unread in the pipe, where the next caller would take it for its own: the worker ends.
            self.kill()
            raise

    def close(self, timeout: float = 2.0) -> None:
        """Ask the worker to exit (end-of-file on its requests), killing it if it lingers."""
        with contextlib.suppress(OSError):
            self._process.stdin.close()  # type: ignore[union-attr]
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def kill(self) -> None:
        """End the worker now: its first process, and so (parent-death signal) everything below."""
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGKILL)
        self._process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]
