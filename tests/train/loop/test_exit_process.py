"""exit_process: a worker of a multi-process run ends with its status and its output flushed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = """
import atexit, sys
from mrlm.train.loop.distributed import exit_process
atexit.register(lambda: print("teardown ran", flush=True))
print("buffered line", end="")  # no newline, no flush: exit_process must flush it
print("to stderr", file=sys.stderr, end="")
exit_process(3)
"""


@pytest.mark.parametrize(("world_size", "teardown"), [("2", False), ("1", True), (None, True)])
def test_status_and_output_survive_and_only_a_worker_skips_teardown(
    world_size: str | None, teardown: bool
) -> None:
    env = {key: value for key, value in os.environ.items() if key != "WORLD_SIZE"}
    if world_size is not None:
        env["WORLD_SIZE"] = world_size
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 3
    assert result.stdout.startswith("buffered line")
    assert "to stderr" in result.stderr
    assert ("teardown ran" in result.stdout) == teardown
