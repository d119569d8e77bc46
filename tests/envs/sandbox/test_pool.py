"""Many threads share one sandbox safely; dead workers are replaced; start-up failures are results."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mrlm.envs.sandbox import Limits, Sandbox, Status
from tests.envs.sandbox.conftest import LIMITS, assert_healthy


def test_concurrent_runs_never_mix_results(sandbox: Sandbox) -> None:
    def run(index: int) -> tuple[int, str, str]:
        source = f"import sys, time\ntime.sleep({index % 3} * 0.01)\nprint({index})\nprint({index}, file=sys.stderr)"
        result = sandbox.run(source, stdin=str(index))
        return index, result.stdout, result.stderr

    with ThreadPoolExecutor(max_workers=32) as pool:
        outcomes = list(pool.map(run, range(96)))
    assert all(stdout == stderr == f"{index}\n" for index, stdout, stderr in outcomes), outcomes


def test_run_many_keeps_order(sandbox: Sandbox) -> None:
    results = sandbox.run_many([f"print({n} * {n})" for n in range(10)])
    assert [result.stdout for result in results] == [f"{n * n}\n" for n in range(10)]


def test_stdin_and_files_reach_the_program(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "import sys, helper\nfrom data.table import table\nprint(helper.shout(sys.stdin.read()), table)",
        stdin="hello",
        files={
            "helper.py": "def shout(text):\n    return text.upper()\n",
            "data/table.py": "table = [1, 2]\n",
        },
    )
    assert (result.status, result.stdout) == (Status.OK, "HELLO [1, 2]\n"), result
    big = "x" * 1_000_000
    echoed = sandbox.run("import sys\nprint(len(sys.stdin.read()))", stdin=big)
    assert echoed.stdout == "1000000\n"


def _wait_gone(pid: int) -> None:
    """Until ``pid`` has exited (a zombie counts as gone)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


@pytest.mark.parametrize("which", [0, 1], ids=["first-process", "fork-server"])
def test_killed_worker_is_replaced(which: int) -> None:
    with Sandbox(LIMITS, workers=1) as sandbox:
        assert sandbox.run("print(1)").ok
        victim = sandbox.worker_pids()[which]
        os.kill(victim, signal.SIGKILL)
        _wait_gone(victim)
        result = sandbox.run("print(2)")
        assert (result.status, result.stdout) == (Status.OK, "2\n"), result
        assert victim not in sandbox.worker_pids()
        assert_healthy(sandbox)


def test_worker_killed_during_a_run_gives_a_sandbox_error_then_recovers() -> None:
    with Sandbox(Limits(wall_time_s=5.0), workers=1) as sandbox:
        sandbox.run("pass")
        server = sandbox.worker_pids()[1]
        threading.Timer(0.3, os.kill, (server, signal.SIGKILL)).start()
        result = sandbox.run("import time\ntime.sleep(1)\nprint('done')")
        # Either the retry on a fresh worker finished it, or it says the sandbox failed.
        assert result.status in (Status.OK, Status.SANDBOX_ERROR), result
        assert sandbox.run("print(3)").stdout == "3\n"
        assert_healthy(sandbox)


def test_a_worker_that_cannot_start_gives_a_sandbox_error() -> None:
    with Sandbox(LIMITS, workers=1, python="/nonexistent/python") as sandbox:
        result = sandbox.run("print(1)")
        assert result.status is Status.SANDBOX_ERROR and "cannot start" in result.message, result
        report = sandbox.isolation
        assert not report.rlimits and "cannot start" in report.warnings[0]


def test_closed_sandbox_refuses_runs() -> None:
    sandbox = Sandbox(LIMITS, workers=1)
    assert sandbox.run("print(1)").ok
    pids = sandbox.worker_pids()
    sandbox.close()
    for pid in pids:
        _wait_gone(pid)
    with pytest.raises(RuntimeError, match="closed"):
        sandbox.run("print(1)")


def test_shared_sandbox_is_one_per_process() -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        instances = set(pool.map(lambda _: id(Sandbox.shared()), range(16)))
    assert len(instances) == 1
    assert Sandbox.shared().run("print('shared')").stdout == "shared\n"


def test_the_largest_limits_allowed_run(sandbox: Sandbox) -> None:
    import resource

    from mrlm.envs.sandbox.api import MAX_BYTES, MAX_OPEN_FILES, MAX_PROCESSES, MAX_SECONDS

    def within_host(most: int, limit: int) -> int:
        # Descriptors and processes cannot be raised past this host's hard limits (a host setting,
        # not the sandbox's): up to them, the most Limits takes.
        hard = resource.getrlimit(limit)[1]
        return most if hard == resource.RLIM_INFINITY else min(most, hard)

    largest = Limits(
        wall_time_s=MAX_SECONDS,
        cpu_time_s=MAX_SECONDS,
        memory_bytes=MAX_BYTES,
        output_bytes=MAX_BYTES,
        file_size_bytes=MAX_BYTES,
        scratch_bytes=MAX_BYTES,
        processes=within_host(MAX_PROCESSES, resource.RLIMIT_NPROC),
        open_files=within_host(MAX_OPEN_FILES, resource.RLIMIT_NOFILE),
    )
    result = sandbox.run("print(6 * 7)", limits=largest)
    assert (result.status, result.stdout) == (Status.OK, "42\n"), result
    assert_healthy(sandbox)


def test_a_wait_that_fails_leaves_no_reply_for_the_next_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request whose wait for the reply fails (here as a deadline too far for poll() once failed:
    OverflowError) must not leave that reply in the worker's pipe, where the next run would read it
    as its own."""
    from mrlm.envs.sandbox import protocol

    read_message = protocol.read_message
    with Sandbox(LIMITS, workers=1) as sandbox:
        assert sandbox.run("print(0)").stdout == "0\n"

        def failing(*args: object, **kwargs: object) -> object:
            monkeypatch.setattr(protocol, "read_message", read_message)  # once
            raise OverflowError("timestamp out of range for platform time_t")

        monkeypatch.setattr(protocol, "read_message", failing)
        with pytest.raises(OverflowError):
            sandbox.run("print('interrupted')")
        time.sleep(0.3)  # its reply has come by now, had the worker lived on
        assert [sandbox.run(f"print({n})").stdout for n in range(1, 5)] == [f"{n}\n" for n in range(1, 5)]
