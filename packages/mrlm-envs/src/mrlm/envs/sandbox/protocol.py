"""Messages between the caller and a worker process: length-prefixed JSON over pipes.

JSON rather than pickle: a reply is data, so even a worker that untrusted code had somehow taken
over could not make the caller run code by answering. Standard library only: the worker imports
this module too.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_HEADER = struct.Struct(">I")
#: Larger frames mean a broken peer, not a message.
MAX_MESSAGE_BYTES = 1 << 30


class ChannelClosed(EOFError):
    """The other end closed the pipe (it exited or was killed)."""


class ChannelTimeout(TimeoutError):
    """No complete message arrived before the deadline."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame: a 4-byte big-endian length, then the message as compact UTF-8 JSON."""
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one frame in full (raises OSError, e.g. BrokenPipeError, when the reader is gone)."""
    view = memoryview(encode(message))
    while view:
        view = view[os.write(fd, view) :]


def read_message(fd: int, deadline: float | None = None) -> dict[str, Any]:
    """Read one frame; ``deadline`` is a ``time.monotonic()`` instant, None waits for ever.

    Raises:
        ChannelClosed: the writer closed the pipe (at a frame boundary or mid-frame).
        ChannelTimeout: the deadline passed first.
    """
    (length,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if length > MAX_MESSAGE_BYTES:
        raise ChannelClosed(f"frame of {length} bytes: the peer is broken")
    message = json.loads(_read_exactly(fd, length, deadline))
    if not isinstance(message, dict):
        raise ChannelClosed("a frame that is not a JSON object: the peer is broken")
    return message


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    needed = size
    while needed:
        if deadline is not None:
            _wait_readable(fd, deadline)
        chunk = os.read(fd, min(needed, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other end closed the channel")
        chunks.append(chunk)
        needed -= len(chunk)
    return b"".join(chunks)


def _wait_readable(fd: int, deadline: float) -> None:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ChannelTimeout("no reply before the deadline")
        if poller.poll(remaining * 1000 + 1):
            return
