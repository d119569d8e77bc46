"""An execution's memory is bounded as a whole where a memory cgroup can be had, and the report says
which bound is active."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrlm.envs.sandbox import IsolationWarning, Limits, Sandbox, Status
from mrlm.envs.sandbox.api import MIB
from mrlm.envs.sandbox.forkserver import cgroup
from mrlm.envs.sandbox.outcome import to_result
from tests.envs.sandbox.conftest import assert_healthy

BOUND = 512 * MIB
#: Nine children that each fill 300 MiB: 2.7 GiB in all, would each stay under RLIMIT_AS alone.
FORK_BOMB = textwrap.dedent(
    """
    import os, time
    print(open('/proc/self/cgroup').read().strip(), flush=True)
    children = []
    for _ in range(9):
        pid = os.fork()
        if pid == 0:
            block = b'x' * (300 << 20)  # written, so resident
            time.sleep(0.3)
            os._exit(0)
        children.append(pid)
    killed = sum(os.WIFSIGNALED(os.waitpid(pid, 0)[1]) for pid in children)
    print('killed', killed)
    """
)


def cgroup_of(result_stdout: str) -> Path:
    """The host directory of the cgroup whose /proc/self/cgroup lines start ``result_stdout``."""
    version, parent = cgroup.locate()
    key = "memory" if version == cgroup.V1 else ""
    for line in result_stdout.splitlines():
        _, controllers, path = line.split(":", 2)
        if key in controllers.split(","):
            name = os.path.basename(path)
            assert name.startswith(cgroup.PREFIX), path
            return Path(parent) / name
    raise AssertionError(f"no memory cgroup in {result_stdout!r}")


def peak_usage(directory: Path) -> int:
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        if (directory / name).exists():
            return int((directory / name).read_text())
    raise AssertionError(f"no peak usage in {directory}")


@pytest.fixture(scope="module")
def bounded() -> Iterator[Sandbox]:
    with Sandbox(Limits(memory_bytes=BOUND, wall_time_s=20.0, cpu_time_s=20.0), workers=1) as sandbox:
        if not sandbox.isolation.memory_cgroup:
            pytest.skip(f"no memory cgroup here: {sandbox.isolation.warnings}")
        yield sandbox


def test_the_report_names_the_bound(bounded: Sandbox) -> None:
    report = bounded.isolation
    assert "memory_cgroup" in report.active()
    assert report.memory_bound in (cgroup.V1, cgroup.V2)


def test_forked_children_share_one_bound(bounded: Sandbox) -> None:
    before = bounded.worker_pids()
    result = bounded.run(FORK_BOMB)
    directory = cgroup_of(result.stdout)
    assert peak_usage(directory) <= BOUND
    killed = int(result.stdout.split("killed")[1]) if "killed" in result.stdout else None
    assert result.status is Status.MEMORY or (killed and killed >= 1), result
    assert_healthy(bounded, before)
    assert bounded.run("print(len(b'x' * (200 << 20)))").stdout == f"{200 << 20}\n"


def test_an_execution_that_fails_for_an_oom_kill_gets_memory(bounded: Sandbox) -> None:
    source = textwrap.dedent(
        """
        import os, time
        pid = os.fork()
        if pid == 0:
            block = b'x' * (300 << 20)
            time.sleep(1)
            os._exit(0)
        block = b'x' * (300 << 20)
        raise SystemExit(os.waitpid(pid, 0)[1] != 0)
        """
    )
    result = bounded.run(source)
    assert result.status is Status.MEMORY and "all processes together" in result.message, result


def test_one_process_over_the_bound_gets_memory(bounded: Sandbox) -> None:
    result = bounded.run("block = bytearray(700 << 20)")
    assert result.status is Status.MEMORY, result


def test_the_cgroup_goes_with_its_worker() -> None:
    with Sandbox(Limits(wall_time_s=2.0), workers=1) as sandbox:
        if not sandbox.isolation.memory_cgroup:
            pytest.skip("no memory cgroup here")
        result = sandbox.run("print(open('/proc/self/cgroup').read().strip())")
        directory = cgroup_of(result.stdout)
        assert directory.is_dir()
    deadline = time.monotonic() + 10.0
    while directory.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not directory.exists()


def test_without_a_cgroup_the_bound_is_per_process() -> None:
    with Sandbox(Limits(wall_time_s=2.0), workers=1, disable=["memory_cgroup"]) as sandbox:
        with pytest.warns(IsolationWarning, match="memory_cgroup"):
            report = sandbox.isolation
        assert (report.memory_cgroup, report.memory_bound) == (False, "per-process rlimit")
        assert sandbox.run("print(1)").ok


@pytest.mark.parametrize("version", [cgroup.V1, cgroup.V2])
def test_limits_and_oom_counts_go_to_the_right_files(tmp_path: Path, version: str) -> None:
    names = ["tasks", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.oom_control"]
    if version == cgroup.V2:
        names = ["cgroup.procs", "memory.max", "memory.swap.max", "memory.events"]
    for name in names:
        (tmp_path / name).write_text("")
    (tmp_path / names[3]).write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    opened = cgroup.MemoryCgroup(version, str(tmp_path))
    opened.set_limit(256 * MIB)
    assert (tmp_path / names[1]).read_text() == str(256 * MIB)
    assert (tmp_path / names[2]).read_text() == (str(256 * MIB) if version == cgroup.V1 else "0")
    assert opened.oom_kills() == 3


@pytest.mark.parametrize(
    ("mount", "path", "expected"),
    [
        (("/", "/sys/fs/cgroup/memory"), "/a/b", "/sys/fs/cgroup/memory/a/b"),
        (("/docker/x", "/sys/fs/cgroup/memory"), "/docker/x/c", "/sys/fs/cgroup/memory/c"),
        (("/docker/x", "/sys/fs/cgroup"), "/docker/x", "/sys/fs/cgroup"),
    ],
)
def test_a_cgroup_is_found_below_its_mount(mount: tuple[str, str], path: str, expected: str) -> None:
    assert cgroup._directory(mount, path) == expected


def test_a_cgroup_out_of_sight_is_refused() -> None:
    with pytest.raises(OSError, match="outside"):
        cgroup._directory(("/docker/x", "/sys/fs/cgroup"), "/other")


@pytest.mark.parametrize(("exit_code", "status"), [(1, Status.MEMORY), (None, Status.MEMORY), (0, Status.OK)])
def test_an_oom_kill_means_memory_unless_the_program_succeeded(exit_code: int | None, status: Status) -> None:
    reply = {
        "exit_code": exit_code,
        "signal": 9 if exit_code is None else None,
        "stdout": "",
        "stderr": "",
        "duration": 0.1,
        "truncated": False,
        "output_exceeded": False,
        "timed_out": False,
        "cpu_time": 0.1,
        "oom_killed": True,
    }
    assert to_result(reply, Limits()).status is status
