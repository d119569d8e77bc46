"""An execution the fork server has forked and not yet watched, and what starting one ahead needs.

The server forks an execution either for the request at hand or, after a request marked
``prestart``, ahead of the next one (see :meth:`~mrlm.envs.sandbox.forkserver.server.ForkServer.prestart`):
then its stdin is a pipe the server writes once the request comes, and :meth:`Launched.serves`
says whether that request is the one it was started for.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
from typing import Any, NamedTuple

from mrlm.envs.sandbox.forkserver.zygote import Zygote

#: Fields of a request that a program started ahead need not share with it.
_NOT_MATCHED = frozenset({"stdin", "prestart"})
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
#: The stdin pipe of a program started ahead is widened to this, where the system allows.
STDIN_PIPE_BYTES = 1 << 20


class Launched(NamedTuple):
    """An execution forked and not yet watched: the server's side of it.

    Attributes:
        request: what it runs (the request without its stdin).
        stdin_write: the write end of its stdin pipe when it was started ahead (else -1), and
            ``stdin_room`` the bytes that pipe holds.
        out_read, err_read, status_read: the read ends of its pipes.
        start: ``time.monotonic()`` when it was started.
        opened: the descriptors to close once it is over.
    """

    request: dict[str, Any]
    allow_exec: bool
    zygote: Zygote
    pid: int
    pidfd: int
    start: float
    stdin_write: int
    stdin_room: int
    out_read: int
    err_read: int
    status_read: int
    scratch: str
    memory: Any
    opened: list[int]

    def serves(self, request: dict[str, Any], stdin: bytes) -> bool:
        """Whether this execution, started ahead, can be ``request``'s: the same program, files
        and limits, a stdin its pipe holds at once, and still alive (waiting for that stdin)."""
        if len(stdin) > self.stdin_room or what_runs(request) != self.request:
            return False
        waiting = select.poll()
        waiting.register(self.zygote.fileno(), select.POLLIN)
        return not waiting.poll(0)  # the zygote says nothing until the execution has ended


def what_runs(request: dict[str, Any]) -> dict[str, Any]:
    """The request without what a program started ahead need not share with it."""
    return {key: value for key, value in request.items() if key not in _NOT_MATCHED}


def widen_stdin_pipe(pipe_write: int) -> int:
    """Widen a pipe to :data:`STDIN_PIPE_BYTES` where the system allows; returns what it holds."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe_write, _F_SETPIPE_SZ, STDIN_PIPE_BYTES)
    try:
        return fcntl.fcntl(pipe_write, _F_GETPIPE_SZ)
    except OSError:
        return 4096  # PIPE_BUF, the least any pipe holds


def write_all(fd: int, content: bytes) -> None:
    """Write all of ``content`` to ``fd``."""
    data = memoryview(content)
    while data:
        data = data[os.write(fd, data) :]
