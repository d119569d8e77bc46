"""torch's CPU thread count follows the cores other processes leave free (loop/cpu_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from mrlm.train.loop.cpu_threads import (
    MIN_SPAN_S,
    CpuThreads,
    busy_seconds,
    free_cores_threads,
    independent_cpu_models,
    side_by_side,
)
from tests.train.loop.helpers import session_for

STAT = """cpu  900 10 300 5000 40 0 7 3 0 0
cpu0 400 5 100 2500 20 0 2 1 0 0
cpu1 500 5 200 2500 20 0 5 2 0 0
intr 12345
ctxt 999
"""


def test_busy_seconds_sums_the_busy_fields_of_the_chosen_cores() -> None:
    # user + nice + system + irq + softirq + steal; idle and iowait are free time.
    assert busy_seconds(STAT, {0}, 100.0) == pytest.approx((400 + 5 + 100 + 0 + 2 + 1) / 100)
    assert busy_seconds(STAT, {1}, 100.0) == pytest.approx((500 + 5 + 200 + 0 + 5 + 2) / 100)
    assert busy_seconds(STAT, {0, 1}, 100.0) == pytest.approx(12.20)
    assert busy_seconds(STAT, {7}, 100.0) == 0.0


@pytest.mark.parametrize(
    ("cores", "foreign", "ceiling", "expected"),
    [
        (2, 0.0, 2, 2),  # idle machine: every core
        (2, 0.4, 2, 2),  # a light neighbour does not cost a thread
        (2, 0.67, 2, 1),  # a busy process sharing two cores with two threads gets ~2/3 of one
        (2, 1.0, 2, 1),
        (2, 2.0, 2, 1),  # never fewer than one
        (8, 1.0, 4, 4),  # never more than the ceiling
        (8, 3.0, 8, 5),
    ],
)
def test_free_cores_threads(cores: int, foreign: float, ceiling: int, expected: int) -> None:
    assert free_cores_threads(cores, foreign, ceiling) == expected


class FakeMachine:
    """/proc/stat and the clocks of a 2-core machine, advanced by hand."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.own = 0.0
        self.ticks = [0, 0]
        self.readable = True

    def spend(self, seconds: float, own_cores: float, foreign_cores: float) -> None:
        self.wall += seconds
        self.own += own_cores * seconds
        busy = (own_cores + foreign_cores) * seconds * 100
        self.ticks[0] += round(busy / 2)
        self.ticks[1] += round(busy / 2)

    def stat(self) -> str | None:
        if not self.readable:
            return None
        lines = [f"cpu{i} {t} 0 0 0 0 0 0 0 0 0" for i, t in enumerate(self.ticks)]
        return "cpu  0 0 0 0\n" + "\n".join(lines) + "\n"


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMachine]:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "sysconf", lambda name: 100)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield FakeMachine()
    torch.set_num_threads(previous)


def follower(machine: FakeMachine, threads: int = 0) -> CpuThreads:
    return CpuThreads(
        threads, read_stat=machine.stat, clock=lambda: machine.wall, cpu_clock=lambda: machine.own
    )


def test_a_busy_neighbour_takes_a_thread_and_gives_it_back_when_it_leaves(two_cores: FakeMachine) -> None:
    machine = two_cores
    threads = follower(machine)
    machine.spend(1.0, own_cores=1.33, foreign_cores=0.67)  # a busy process gets ~2/3 of a core
    assert threads.adjust() == 2  # one span is not enough to change
    machine.spend(1.0, own_cores=1.33, foreign_cores=0.67)
    assert threads.adjust() == 1  # the second in a row is
    assert torch.get_num_threads() == 1
    machine.spend(1.0, own_cores=1.0, foreign_cores=1.0)  # with one thread, the neighbour gets its core
    assert threads.adjust() == 1
    machine.spend(1.0, own_cores=1.0, foreign_cores=0.0)  # the neighbour is gone
    assert threads.adjust() == 1
    machine.spend(1.0, own_cores=1.0, foreign_cores=0.0)
    assert threads.adjust() == 2
    assert torch.get_num_threads() == 2


def test_a_burst_beside_the_run_changes_nothing(two_cores: FakeMachine) -> None:
    machine = two_cores
    threads = follower(machine)
    for foreign in (0.0, 1.0, 0.0, 1.0, 0.0):  # busy spans never two in a row
        machine.spend(1.0, own_cores=2.0 - foreign, foreign_cores=foreign)
        assert threads.adjust() == 2


def test_short_steps_are_pooled_until_the_span_is_long_enough(two_cores: FakeMachine) -> None:
    machine = two_cores
    threads = follower(machine)
    for _ in range(2):  # two spans, each of two short steps
        machine.spend(MIN_SPAN_S / 2, own_cores=1.0, foreign_cores=1.0)
        assert threads.adjust() == 2  # too short to judge: not a span yet
        machine.spend(MIN_SPAN_S / 2, own_cores=1.0, foreign_cores=1.0)
        threads.adjust()
    assert torch.get_num_threads() == 1


def test_a_fixed_count_is_set_once_and_kept(two_cores: FakeMachine) -> None:
    machine = two_cores
    threads = follower(machine, threads=1)
    assert torch.get_num_threads() == 1
    machine.spend(1.0, own_cores=1.0, foreign_cores=0.0)
    assert threads.adjust() == 1
    threads.restore()
    assert torch.get_num_threads() == 2


def test_an_unreadable_proc_stat_line_keeps_the_count(two_cores: FakeMachine) -> None:
    machine = two_cores
    lines = [machine.stat()]
    threads = CpuThreads(
        read_stat=lambda: lines[-1], clock=lambda: machine.wall, cpu_clock=lambda: machine.own
    )
    lines.append("cpu0 12 x 3\n")  # a field that is not a number
    machine.spend(1.0, own_cores=0.0, foreign_cores=2.0)
    assert threads.adjust() == 2
    machine.spend(1.0, own_cores=0.0, foreign_cores=2.0)
    assert threads.adjust() == 2


def test_without_proc_stat_the_count_stays(two_cores: FakeMachine) -> None:
    machine = two_cores
    machine.readable = False
    threads = follower(machine)
    machine.spend(1.0, own_cores=0.0, foreign_cores=2.0)
    assert threads.adjust() == 2


def test_negative_threads_are_refused() -> None:
    with pytest.raises(ValueError, match="threads must be >= 0"):
        CpuThreads(-1)


def test_a_session_follows_the_free_cores_and_restores_torch_on_close(
    two_cores: FakeMachine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine = two_cores
    monkeypatch.setattr("mrlm.train.loop.session.CpuThreads", lambda threads: follower(machine, threads))
    model = torch.nn.Linear(4, 1)
    with session_for(model, tmp_path / "run", dist={"cpu": True}) as session:
        for _ in range(2):
            machine.spend(1.0, own_cores=1.0, foreign_cores=1.0)
            session.backward(model(torch.ones(2, 4)).sum())
            session.optimizer_step()  # outside training_step(): a training step of its own
        assert session.step == 2
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_busy_processes_on_the_same_cores_bring_the_count_down_on_a_real_machine(tmp_path: Path) -> None:
    # A process pinned to at most 2 cores, with a spinning neighbour on each of them, reads the real
    # /proc/stat and its own CPU clock: the neighbours' time must come out as foreign.
    script = textwrap.dedent(
        """
        import os, subprocess, sys, time
        import torch
        from mrlm.train.loop.cpu_threads import CpuThreads
        cores = sorted(os.sched_getaffinity(0))[:2]
        os.sched_setaffinity(0, cores)
        torch.set_num_threads(len(cores))
        threads = CpuThreads()
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in cores]
        try:
            time.sleep(0.8)
            threads.adjust()
            time.sleep(0.8)
            print(len(cores), threads.ceiling, threads.adjust())
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    cores, ceiling, chosen = (int(word) for word in done.stdout.split())
    assert ceiling == cores
    assert chosen == 1


@pytest.mark.usefixtures("two_threads")
def test_side_by_side_runs_the_jobs_at_once_on_a_share_of_the_threads_each() -> None:
    # Each job waits for the other at the barrier: run one after the other, the first would time out.
    meeting = threading.Barrier(2, timeout=10)

    def job(tag: str) -> tuple[str, int, int]:
        meeting.wait()
        return tag, torch.get_num_threads(), threading.get_ident()

    (a, threads_a, ident_a), (b, threads_b, ident_b) = side_by_side([lambda: job("a"), lambda: job("b")])
    assert (a, b) == ("a", "b")  # results in job order
    assert threads_a == threads_b == 1
    assert ident_a != ident_b != threading.get_ident()
    assert torch.get_num_threads() == 2  # the caller's count is its own


def test_side_by_side_with_one_thread_runs_the_jobs_in_turn_here() -> None:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        idents = side_by_side([threading.get_ident, threading.get_ident])
    finally:
        torch.set_num_threads(previous)
    assert idents == [threading.get_ident()] * 2


@pytest.mark.usefixtures("two_threads")
def test_side_by_side_raises_what_a_job_raised_after_every_job_ended() -> None:
    finished: list[str] = []

    def fails() -> None:
        raise ValueError("bad job")

    def slow() -> None:
        time.sleep(0.2)
        finished.append("slow")

    with pytest.raises(ValueError, match="bad job"):
        side_by_side([fails, slow])
    assert finished == ["slow"]


def test_independent_models_are_separate_cpu_models() -> None:
    first, second = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    assert independent_cpu_models([first, second])
    assert not independent_cpu_models([first])  # nothing to share
    assert not independent_cpu_models([first, first])
    shared = torch.nn.Sequential(first, torch.nn.ReLU())
    assert not independent_cpu_models([shared, torch.nn.Sequential(first)])  # adapters over one base
    assert not independent_cpu_models([first, torch.nn.Linear(2, 2, device="meta")])
