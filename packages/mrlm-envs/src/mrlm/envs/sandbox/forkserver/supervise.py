"""Watch one execution: collect capped output and setup errors, kill at the deadline or on a flood.

Ends once the execution's process has exited and every pipe has reached end-of-file, which in a pid
namespace means every process of the execution is gone. Without one, descendants may hold the pipes
open, so they are killed when the process exits and reading stops a short grace period later.
Asked to end at its output's end, it ends as soon as every pipe has reached end-of-file, exited or
not: the caller takes what the program wrote as the result and ends the rest itself. A program it
killed (a limit reached) is still waited for, at most the grace period, so that it is gone, not
dying, when the caller answers.
"""

from __future__ import annotations

import json
import os
import select
import time
from collections.abc import Callable
from typing import Any, NamedTuple

_CHUNK = 1 << 16
#: After a kill: how long to wait for the pipes to close, contained (pid namespace) or not.
_GRACE_CONTAINED_S = 5.0
_GRACE_LOOSE_S = 0.2


class Stream:
    """One captured output stream, keeping at most ``cap`` bytes."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.data += chunk[: max(room, 0)]
            self.truncated = True
        else:
            self.data += chunk

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Watch:
    """What supervision saw: output, status lines, and why it killed the execution, if it did."""

    def __init__(self, stdout: Stream, stderr: Stream) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.messages: list[dict[str, Any]] = []
        self.timed_out = False
        self.output_exceeded = False
        self.caller_gone = False
        self.exited = False


class Target(NamedTuple):
    """The execution's process as supervision sees it.

    Attributes:
        exit_fd: becomes readable once the process has exited (and been reaped).
        kill: ends it and every process it started.
        contained: it is pid 1 of its own pid namespace, so its exit ends all the others.
    """

    exit_fd: int
    kill: Callable[[], None]
    contained: bool


def supervise(
    target: Target,
    stdout: Stream,
    stderr: Stream,
    status_fd: int,
    channel_fd: int,
    deadline: float,
    until_output_closed: bool = False,
) -> Watch:
    """Read until the process has exited and every pipe has closed, killing it when it must end.

    Args:
        target: the execution's process.
        stdout, stderr: the output pipes' read ends.
        status_fd: the status pipe's read end (JSON lines about failed setup steps).
        channel_fd: the caller's request pipe: readable here only when the caller has gone.
        deadline: ``time.monotonic()`` instant of the wall-time limit.
        until_output_closed: stop once every pipe has closed, whether or not the process has exited
            (``Watch.exited`` says whether it was seen to); the caller then ends the execution. Once
            killed here, the process is waited for as without this option.
    """
    watch = Watch(stdout, stderr)
    streams = {stdout.fd: stdout, stderr.fd: stderr}
    status = bytearray()
    poller = select.poll()
    for fd in (stdout.fd, stderr.fd, status_fd, channel_fd, target.exit_fd):
        poller.register(fd, select.POLLIN)
    open_fds = {stdout.fd, stderr.fd, status_fd}
    exited = killed = False

    def kill(reason: str | None) -> None:
        nonlocal killed, deadline
        if reason is not None:
            setattr(watch, reason, True)
        if not killed:
            killed = True
            target.kill()
            deadline = time.monotonic() + (_GRACE_CONTAINED_S if target.contained else _GRACE_LOOSE_S)

    while open_fds or not (exited or (until_output_closed and not killed)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if killed:
                break  # pipes held open by processes out of reach; stop listening
            kill("timed_out")
            continue
        for fd, _ in poller.poll(remaining * 1000 + 1):
            if fd == target.exit_fd:
                exited = True
                poller.unregister(fd)
                if not target.contained:
                    kill(None)  # its leftovers, which no namespace ends for us
            elif fd == channel_fd:
                poller.unregister(channel_fd)
                kill("caller_gone")
            elif fd in open_fds:
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                elif fd == status_fd:
                    status += chunk
                else:
                    stream = streams[fd]
                    stream.add(chunk)
                    if stream.truncated and not killed:
                        kill("output_exceeded")
    watch.messages = _parse_lines(bytes(status))
    watch.exited = exited
    return watch


def _parse_lines(data: bytes) -> list[dict[str, Any]]:
    messages = []
    for line in data.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if isinstance(message, dict):
            messages.append(message)
    return messages
