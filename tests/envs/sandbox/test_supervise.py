"""``supervise`` on pipes of its own, with a stand-in for the execution's process: what it waits for
when asked to end at the output's end."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from mrlm.envs.sandbox.forkserver.supervise import Stream, Target, supervise


class StandIn:
    """Pipes as an execution holds them: its output and status write ends, and an exit pipe that
    becomes readable ``dies_after_s`` after a kill, as a killed process is reaped a moment later."""

    def __init__(self, dies_after_s: float) -> None:
        self.out_read, self.out_write = os.pipe()
        self.err_read, self.err_write = os.pipe()
        self.status_read, self.status_write = os.pipe()
        self.channel_read, self.channel_write = os.pipe()
        self.exit_read, self.exit_write = os.pipe()
        self.dies_after_s = dies_after_s
        self.killed_at: float | None = None
        self.reaped: threading.Timer | None = None

    def kill(self) -> None:
        """The pipes close at once (the kernel closes a killed process's files); the exit comes later."""
        self.killed_at = time.monotonic()
        for fd in (self.out_write, self.err_write, self.status_write):
            os.close(fd)
        self.reaped = threading.Timer(self.dies_after_s, os.write, (self.exit_write, b"x"))
        self.reaped.start()

    def close(self) -> None:
        if self.reaped is not None:
            self.reaped.join()
        for fd in (self.out_read, self.err_read, self.status_read, self.channel_read):
            os.close(fd)
        for fd in (self.channel_write, self.exit_read, self.exit_write):
            os.close(fd)


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    process = StandIn(dies_after_s=0.3)
    yield process
    process.close()


def test_a_flood_killed_at_the_output_limit_is_waited_for(stand_in: StandIn) -> None:
    os.write(stand_in.out_write, b"x" * 200)  # past the cap of 100: killed
    watch = supervise(
        Target(stand_in.exit_read, stand_in.kill, contained=True),
        Stream(stand_in.out_read, 100),
        Stream(stand_in.err_read, 100),
        stand_in.status_read,
        stand_in.channel_read,
        deadline=time.monotonic() + 10.0,
        until_output_closed=True,
    )
    assert watch.output_exceeded
    assert stand_in.killed_at is not None
    # Its output closed with the kill, but the answer waited for the exit that came 0.3 s later.
    assert watch.exited
    assert time.monotonic() - stand_in.killed_at >= 0.25


def test_a_program_that_closed_its_output_is_not_waited_for(stand_in: StandIn) -> None:
    os.write(stand_in.out_write, b"result\n")
    for fd in (stand_in.out_write, stand_in.err_write, stand_in.status_write):
        os.close(fd)
    started = time.monotonic()
    watch = supervise(
        Target(stand_in.exit_read, stand_in.kill, contained=True),
        Stream(stand_in.out_read, 100),
        Stream(stand_in.err_read, 100),
        stand_in.status_read,
        stand_in.channel_read,
        deadline=time.monotonic() + 10.0,
        until_output_closed=True,
    )
    assert (bytes(watch.stdout.data), watch.exited, stand_in.killed_at) == (b"result\n", False, None)
    assert time.monotonic() - started < 5.0  # not the 10 s deadline
