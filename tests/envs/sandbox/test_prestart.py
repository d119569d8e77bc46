"""``Sandbox.run(..., prestart=True)``: the worker starts the same program again ahead of the next
request and holds it at its first read of stdin; only a run of the same program, files and limits
takes it, anything else ends it first, and nothing of it outlives the sandbox."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mrlm.envs.sandbox import Limits, Sandbox, Status
from tests.envs.sandbox.conftest import LIMITS, leftovers

#: Prints what it did before its stdin came, then how long it waited for it and what it got.
WAITER = (
    "import sys, time\n"
    "print('early', flush=True)\n"
    "started = time.monotonic()\n"
    "data = sys.stdin.read()\n"
    "print(round(time.monotonic() - started, 3), len(data), data[:8])\n"
)


@pytest.fixture
def one_worker() -> Iterator[Sandbox]:
    """A sandbox of its own (what it holds must not show up in other tests' census) with one
    worker, so every run meets what the previous one left."""
    with Sandbox(LIMITS, workers=1) as sandbox:
        yield sandbox


def _held(sandbox: Sandbox, count: int = 1) -> list[int]:
    """The processes held for the next run, once there are ``count`` of them (or 5 s passed): the
    worker starts them just after its reply."""
    deadline = time.monotonic() + 5
    while len(found := leftovers(sandbox)) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


def _waited(result_stdout: str) -> tuple[float, int, str]:
    early, line = result_stdout.splitlines()
    assert early == "early"
    waited, size, head = line.split(" ")
    return float(waited), int(size), head


def test_the_next_run_takes_the_program_started_ahead(one_worker: Sandbox) -> None:
    first = one_worker.run(WAITER, stdin="hello", prestart=True)
    assert first.status is Status.OK and _waited(first.stdout)[1:] == (5, "hello"), first
    assert len(_held(one_worker)) == 1  # the program started ahead, waiting for its stdin
    time.sleep(1.0)
    second = one_worker.run(WAITER, stdin="world" * 10)  # a run without prestart takes it too
    waited, size, head = _waited(second.stdout)
    assert second.status is Status.OK and (size, head) == (50, "worldwor"), second
    assert waited >= 0.5  # it was started before this run was asked for, and waited for its stdin
    assert second.duration_s < 0.5  # its wall time counts from the request, not from its start
    assert leftovers(one_worker) == []  # nothing asked for another one


def test_wall_time_counts_from_the_request(one_worker: Sandbox) -> None:
    limits = Limits(wall_time_s=1.0, cpu_time_s=1.0)
    one_worker.run(WAITER, stdin="a", limits=limits, prestart=True)
    time.sleep(1.5)  # longer than the limit, spent waiting for the request
    result = one_worker.run(WAITER, stdin="b", limits=limits)
    assert result.status is Status.OK and _waited(result.stdout)[0] >= 1.0, result


@pytest.mark.parametrize(
    "other",
    [
        {"source": "import os\nprint('other', len(os.listdir('.')))"},
        {"source": WAITER, "files": {"extra.txt": "x"}},
        {"source": WAITER, "limits": Limits(wall_time_s=1.0, cpu_time_s=2.0)},
    ],
    ids=["another-program", "other-files", "other-limits"],
)
def test_any_other_run_ends_the_held_program_first(one_worker: Sandbox, other: dict) -> None:
    one_worker.run(WAITER, stdin="a", prestart=True)
    assert len(_held(one_worker)) == 1
    time.sleep(0.7)  # so that the held program, were it used, would show how long it waited
    result = one_worker.run(other["source"], stdin="b", files=other.get("files"), limits=other.get("limits"))
    assert result.status is Status.OK, result
    if other["source"] == WAITER:
        assert _waited(result.stdout)[0] < 0.5  # started for this run, not the held one
    else:
        assert result.stdout == "other 1\n"  # its own scratch directory: main.py alone
    assert leftovers(one_worker) == []


def test_a_stdin_larger_than_the_pipe_starts_afresh(one_worker: Sandbox) -> None:
    one_worker.run(WAITER, stdin="a", prestart=True)
    time.sleep(0.5)
    big = "x" * (3 << 20)
    result = one_worker.run(WAITER, stdin=big, limits=Limits(wall_time_s=5.0, cpu_time_s=5.0))
    assert result.status is Status.OK and _waited(result.stdout)[1] == len(big), result
    limits_as_before = one_worker.run(WAITER, stdin=big)
    waited, size, _ = _waited(limits_as_before.stdout)
    assert size == len(big) and waited < 0.5, limits_as_before  # not the held one: it cannot hold this


def test_a_program_that_ended_before_its_request_is_not_used(one_worker: Sandbox) -> None:
    clock = "import time\nprint(time.monotonic())"  # never reads stdin: it ends at once
    one_worker.run(clock, prestart=True)
    time.sleep(0.5)
    asked = time.monotonic()
    result = one_worker.run(clock)
    assert result.status is Status.OK and float(result.stdout) >= asked, result  # a fresh run's output


def test_closing_the_sandbox_ends_the_held_program() -> None:
    sandbox = Sandbox(LIMITS, workers=1)
    sandbox.run(WAITER, stdin="a", prestart=True)
    held = _held(sandbox)
    assert len(held) == 1
    sandbox.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in held):
        time.sleep(0.02)
    assert not any(_alive(pid) for pid in held)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_code_judges_are_started_ahead(one_worker: Sandbox) -> None:
    import gymnasium

    import mrlm.envs  # noqa: F401  (registers the ids)

    env = gymnasium.make("mrlm/Code-v0", sandbox=one_worker)
    try:
        for _ in range(2):  # the second reply is judged by the judge started after the first
            env.reset(seed=0)
            _, reward, _, _, info = env.step("```python\ndef nothing():\n    pass\n```")
            assert reward == 0.0 and info["outcome"] == "failed", info
            # waiting for the next task: the judge and its solution's process, forked before it
            assert len(_held(one_worker, 2)) == 2
    finally:
        env.close()


def test_a_held_program_stays_within_its_cpu_limit(one_worker: Sandbox) -> None:
    spinner = "while True:\n    pass\n"  # never reads stdin: held, it would spin until the next run
    limits = Limits(wall_time_s=0.5, cpu_time_s=1.0)
    assert one_worker.run(spinner, limits=limits, prestart=True).status is Status.TIMEOUT
    assert len(_held(one_worker)) == 1
    deadline = time.monotonic() + 10
    while leftovers(one_worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(one_worker) == []  # killed at its CPU limit, though no run asked for it
