"""Hostile programs are contained: the result says what happened, nothing is left running, the
caller and the workers stay healthy, and nothing outside the scratch directory changes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from mrlm.envs.sandbox import Limits, Sandbox, Status
from mrlm.envs.sandbox.api import MIB
from tests.envs.sandbox.conftest import LIMITS, assert_healthy, leftovers

REPO = Path(__file__).resolve().parents[3]


def run(sandbox: Sandbox, source: str, **kwargs: object) -> tuple:
    """Run dedented ``source``; returns the result and the worker pids from before."""
    before = sandbox.worker_pids()
    result = sandbox.run(textwrap.dedent(source), **kwargs)  # type: ignore[arg-type]
    return result, before


@pytest.mark.parametrize(
    ("source", "status", "message"),
    [
        pytest.param("while True:\n    pass\n", Status.TIMEOUT, "time limit", id="infinite-loop"),
        pytest.param(
            "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n",
            Status.TIMEOUT,
            "time limit",
            id="ignores-sigterm",
        ),
        pytest.param(
            "import os\nwhile True:\n    os.fork()\n", Status.ERROR, "BlockingIOError", id="fork-bomb"
        ),
        pytest.param(
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
            Status.TIMEOUT,
            "time limit",
            id="fork-bomb-that-keeps-trying",
        ),
        pytest.param("x = bytearray(2 * 1024**3)\n", Status.MEMORY, "memory limit", id="one-huge-allocation"),
        pytest.param(
            # Small chunks, so the limit is reached by many allocations, each of which succeeds.
            "chunks = []\nwhile True:\n    chunks.append(bytes(10**5))\n",
            Status.MEMORY,
            "memory limit",
            id="memory-bomb",
        ),
        pytest.param("def f():\n    return f()\nf()\n", Status.ERROR, "RecursionError", id="deep-recursion"),
        pytest.param(
            "import sys\nsys.setrecursionlimit(10**9)\nclass A:\n    def __getattr__(self, name):\n"
            "        return getattr(self, name)\nA().x\n",
            Status.KILLED,
            "SIGSEGV",
            id="recursion-past-the-c-stack",
        ),
        pytest.param("import ctypes\nctypes.string_at(0)\n", Status.KILLED, "SIGSEGV", id="ctypes-segfault"),
        pytest.param("import sys\nsys.exit(3)\n", Status.ERROR, "exit status 3", id="sys-exit-3"),
        pytest.param("raise SystemExit('bye')\n", Status.ERROR, "bye", id="system-exit-message"),
        pytest.param("import os\nos._exit(0)\n", Status.OK, "ok", id="os-exit-0"),
        pytest.param("input()\n", Status.ERROR, "EOFError", id="input-without-stdin"),
        pytest.param(
            "import threading, time\nthreading.Thread(target=time.sleep, args=(1000,)).start()\n",
            Status.TIMEOUT,
            "time limit",
            id="thread-that-never-ends",
        ),
    ],
)
def test_hostile_program_is_contained(sandbox: Sandbox, source: str, status: Status, message: str) -> None:
    # Small memory: filling it must take well under the wall-time limit on a slow machine too.
    limits = Limits(wall_time_s=LIMITS.wall_time_s, cpu_time_s=LIMITS.cpu_time_s, memory_bytes=96 * MIB)
    result, before = run(sandbox, source, limits=limits)
    assert result.status is status, result
    assert message in result.message, result
    assert result.duration_s < LIMITS.wall_time_s + 1.0
    assert_healthy(sandbox, before)


def test_exit_statuses_are_told_apart(sandbox: Sandbox) -> None:
    exited = sandbox.run("import sys\nsys.exit(3)")
    assert (exited.status, exited.exit_code, exited.signal) == (Status.ERROR, 3, None)
    quit_early = sandbox.run("import os\nprint('bye', flush=True)\nos._exit(0)")
    assert (quit_early.status, quit_early.exit_code, quit_early.stdout) == (Status.OK, 0, "bye\n")
    failed = sandbox.run("assert 1 + 1 == 3")
    assert (failed.status, failed.exit_code, failed.message) == (Status.ERROR, 1, "AssertionError")
    assert 'File "/tmp/main.py", line 1' in failed.stderr and "assert 1 + 1 == 3" in failed.stderr
    assert "forkserver" not in failed.stderr  # the traceback is the program's alone, as with python
    broken = sandbox.run("def f(:\n    pass\n")
    assert (broken.status, broken.message) == (Status.ERROR, "SyntaxError: invalid syntax")
    assert broken.stderr.startswith('  File "/tmp/main.py", line 1')


def test_output_flood_is_cut_and_killed(sandbox: Sandbox) -> None:
    result, before = run(sandbox, "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    assert result.status is Status.OUTPUT_LIMIT and result.signal == signal.SIGKILL
    assert result.output_truncated and result.stdout == "x" * LIMITS.output_bytes
    assert result.duration_s < 0.5
    assert_healthy(sandbox, before)


def test_gigabyte_of_output_costs_nothing(sandbox: Sandbox) -> None:
    result, _ = run(sandbox, "import os\nfor _ in range(1024):\n    os.write(2, b'e' * 2**20)\n")
    assert result.status is Status.OUTPUT_LIMIT and len(result.stderr) == LIMITS.output_bytes


def test_cpu_time_limit(sandbox: Sandbox) -> None:
    limits = Limits(wall_time_s=20.0, cpu_time_s=1.0)
    result = sandbox.run("while True:\n    pass\n", limits=limits)
    assert result.status is Status.TIMEOUT and "CPU time" in result.message, result
    assert result.signal in (signal.SIGKILL, signal.SIGXCPU)


#: A neighbour that wakes every millisecond or so and computes for 1.5 ms: it takes the CPU between
#: scheduler ticks, so a program beside it is charged whole ticks it only partly ran.
_RESTLESS_NEIGHBOUR = """
import time
end = time.monotonic() + 30
while time.monotonic() < end:
    start = time.perf_counter()
    while time.perf_counter() - start < 0.0015:
        pass
    time.sleep(0.0007)
"""


def test_cpu_time_limit_is_named_beside_restless_neighbours(sandbox: Sandbox) -> None:
    """RLIMIT_CPU counts ticks: beside such neighbours it kills a program that has run for 0.7-0.9 s
    of a 1 s limit. The kill is still reported as the CPU time limit, never as an unexplained SIGKILL."""
    neighbours = [
        subprocess.Popen([sys.executable, "-c", _RESTLESS_NEIGHBOUR], start_new_session=True)
        for _ in range(3)
    ]
    try:
        limits = Limits(wall_time_s=20.0, cpu_time_s=1.0)
        results = [sandbox.run("while True:\n    pass\n", limits=limits) for _ in range(4)]
    finally:
        for neighbour in neighbours:
            neighbour.kill()
            neighbour.wait()
    for result in results:
        assert result.status is Status.TIMEOUT and "CPU time" in result.message, result


def test_signals_to_parent_and_workers_go_nowhere(sandbox: Sandbox) -> None:
    before = sandbox.worker_pids()
    result, _ = run(
        sandbox,
        f"""
        import os, signal
        targets = [os.getppid(), *{before}]
        for entry in os.listdir('/proc'):
            try:
                if entry.isdigit() and b'boot.py' in open(f'/proc/{{entry}}/cmdline', 'rb').read():
                    targets.append(int(entry))
            except OSError:
                pass
        for pid in [*targets, -1]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        print('still here')
        """,
    )
    assert (result.status, result.stdout) == (Status.OK, "still here\n"), result
    assert_healthy(sandbox, before)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "import subprocess\nsubprocess.Popen(['sleep', '1000'], start_new_session=True)\nprint('started')\n",
            id="daemonised-subprocess",
        ),
        pytest.param(
            """
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(1000)
                os._exit(0)
            print('started')
            """,
            id="double-fork",
        ),
        pytest.param(
            "import threading, time\nthreading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n"
            "print('started')\n",
            id="daemon-thread",
        ),
    ],
)
def test_nothing_outlives_the_program(sandbox: Sandbox, source: str) -> None:
    limits = Limits(wall_time_s=5.0, allow_exec=True)
    result, before = run(sandbox, source, limits=limits)
    assert (result.status, result.stdout) == (Status.OK, "started\n"), result
    assert result.duration_s < 1.0  # it ended when the program did, not at the deadline
    assert_healthy(sandbox, before)


def test_running_other_programs_needs_allow_exec(sandbox: Sandbox) -> None:
    source = "import subprocess\nprint(subprocess.run(['true']).returncode)"
    refused = sandbox.run(source)
    if not sandbox.isolation.seccomp:
        pytest.skip("without seccomp, exec is not blocked")
    assert refused.status is Status.ERROR and "PermissionError" in refused.message
    allowed = sandbox.run(source, limits=Limits(allow_exec=True))
    assert (allowed.status, allowed.stdout) == (Status.OK, "0\n")


def test_network_is_unreachable(sandbox: Sandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.3)
        port = listener.getsockname()[1]
        result, before = run(
            sandbox,
            f"""
            import socket
            for attempt in (
                lambda: socket.create_connection(('127.0.0.1', {port}), timeout=0.5),
                lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port})),
                lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM),
            ):
                try:
                    attempt()
                    print('reached')
                except OSError as error:
                    print(type(error).__name__)
            """,
        )
        with pytest.raises(socket.timeout):
            listener.accept()  # no connection ever arrived
    assert result.status is Status.OK and "reached" not in result.stdout, result
    assert_healthy(sandbox, before)


def test_files_outside_scratch_stay_untouched(sandbox: Sandbox, tmp_path: Path) -> None:
    hidden = tmp_path / "sentinel"  # under the host's /tmp: not even visible inside
    hidden.write_text("original")
    visible_dir = Path("/var/tmp") / f"mrlm-sandbox-test-{uuid.uuid4().hex}"
    visible_dir.mkdir(mode=0o755)
    visible = visible_dir / "sentinel"  # visible inside (without a private root), read-only, root's
    visible.write_text("original")
    escapes = [
        REPO / f"sandbox-was-here-{uuid.uuid4().hex}",
        Path(f"/root/sandbox-was-here-{uuid.uuid4().hex}"),
    ]
    probe_name = f"sandbox-was-here-{uuid.uuid4().hex}"
    try:
        result, before = run(
            sandbox,
            f"""
            import os, shutil
            for path in {[str(hidden), str(visible)]}:
                for attempt in (lambda: os.remove(path), lambda: open(path, 'w').write('changed'),
                                lambda: shutil.rmtree(os.path.dirname(path))):
                    try:
                        attempt()
                        print('changed', path)
                    except OSError:
                        pass
            for path in {[str(path) for path in escapes]}:
                try:
                    open(path, 'w').write('x')
                    print('wrote', path)
                except OSError:
                    pass
            open('/tmp/{probe_name}', 'w').write('only in scratch')
            open('/dev/shm/{probe_name}', 'w').write('only in scratch')
            print(sorted(os.listdir('.')))
            """,
        )
        assert result.status is Status.OK, result
        assert hidden.read_text() == "original" and visible.read_text() == "original"
        assert not any(path.exists() for path in escapes)
        assert not (Path("/tmp") / probe_name).exists() and not (Path("/dev/shm") / probe_name).exists()
        if sandbox.isolation.read_only_filesystem:
            assert "changed" not in result.stdout and "wrote" not in result.stdout, result.stdout
        assert_healthy(sandbox, before)
        # The next program starts with an empty scratch directory again.
        assert sandbox.run("import os\nprint(sorted(os.listdir('.')))").stdout == "['main.py']\n"
    finally:
        visible.unlink(missing_ok=True)
        visible_dir.rmdir()


def test_no_leftovers_after_a_timeout(sandbox: Sandbox) -> None:
    result, before = run(
        sandbox,
        """
        import os, time
        for _ in range(5):
            if os.fork() == 0:
                os.setsid()
                while True:
                    pass
        time.sleep(60)
        """,
    )
    assert result.status is Status.TIMEOUT
    assert leftovers(sandbox) == []
    assert_healthy(sandbox, before)


def test_runs_as_an_unprivileged_user(sandbox: Sandbox) -> None:
    if os.geteuid() != 0 or not sandbox.isolation.unprivileged_user:
        pytest.skip("a uid of its own needs a worker started as root")
    result = sandbox.run(
        "import os\nprint(os.getuid())\nprint(os.getgroups())\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])"
    )
    uid, groups, capabilities = result.stdout.splitlines()
    assert int(uid) != 0 and groups == "[]" and int(capabilities, 16) == 0


def test_scratch_is_emptied_even_of_deep_trees(sandbox: Sandbox) -> None:
    limits = Limits(wall_time_s=10.0)
    source = "import os\nfor _ in range(2500):\n    os.mkdir('d')\n    os.chdir('d')\nopen('leaf', 'w').write('x')\n"
    result, before = run(sandbox, source, limits=limits)
    assert result.status is Status.OK, result
    listing = sandbox.run("import os\nprint(sorted(os.listdir('.')))")
    assert listing.stdout == "['main.py']\n"
    assert_healthy(sandbox, before)
