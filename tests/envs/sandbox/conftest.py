"""Fixtures of the sandbox tests: a shared sandbox with short limits, and a census of its processes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrlm.envs.sandbox import Limits, Sandbox, Status
from mrlm.envs.sandbox.api import MIB
from mrlm.envs.sandbox.pool import MAX_WORKERS, UID_BASE

#: Short limits keep the hostile tests fast.
LIMITS = Limits(wall_time_s=1.0, cpu_time_s=1.0, memory_bytes=256 * MIB, output_bytes=64 * 1024)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox(LIMITS, workers=2) as shared:
        # Start the workers now, so that their pids are known from the first test on.
        assert shared.isolation.separate_process
        yield shared


def _program_uids() -> range:
    """Host uids the programs of this process's workers run as (see pool.WorkerPool._spawn)."""
    first = UID_BASE + 1 + (os.getpid() % 16384) * MAX_WORKERS
    return range(first, first + MAX_WORKERS)


def _uid_and_parent(pid: str) -> tuple[int, int] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None  # gone meanwhile
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["Uid"].split()[0]), int(fields["PPid"])


def leftovers(sandbox: Sandbox) -> list[int]:
    """Live processes of sandboxed programs: those running as a program uid of ours (started as
    root), and anything below the workers that is not a worker process itself. Processes in the
    tree of another sandbox of this process (a code env's judges waiting for their next task in
    the shared sandbox, say) are that sandbox's, not leftovers of this one."""
    workers = set(sandbox.worker_pids())
    table = {
        int(pid): info for pid in os.listdir("/proc") if pid.isdigit() and (info := _uid_and_parent(pid))
    }
    zygotes = {pid for pid, (_, parent) in table.items() if parent in workers}
    others = {
        pid
        for pid, (_, parent) in table.items()
        if parent == os.getpid() and pid not in workers and _is_worker(pid)
    }
    found = []
    for pid, (uid, parent) in table.items():
        if pid in workers or pid in zygotes:
            continue
        below = parent in workers or parent in zygotes
        elsewhere = parent in others
        while not below and not elsewhere and parent in table and parent > 1:
            parent = table[parent][1]
            below, elsewhere = parent in workers, parent in others
        if below or (os.geteuid() == 0 and uid in _program_uids() and not elsewhere):
            found.append(pid)
    return found


def _is_worker(pid: int) -> bool:
    """Whether ``pid`` is a sandbox worker's first process (started with the worker's boot script)."""
    try:
        return b"forkserver/boot.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def assert_healthy(sandbox: Sandbox, workers_before: list[int] | None = None) -> None:
    """Nothing of the last program is left, the workers are the same, and a normal run is quick."""
    assert leftovers(sandbox) == []
    if workers_before is not None:
        assert sandbox.worker_pids() == workers_before
    start = time.monotonic()
    result = sandbox.run("print('still fine')")
    assert (result.status, result.stdout) == (Status.OK, "still fine\n"), result
    assert time.monotonic() - start < 1.0
