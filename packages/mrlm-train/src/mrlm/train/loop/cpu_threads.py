"""How many threads torch computes with on CPU: as many as the cores other processes leave free.

torch starts with one compute thread per core and every operation waits at a barrier for all of
them. When another process keeps one of the cores busy, the thread that shares its core runs in
slices and each barrier waits for it: on 2 cores with one busy neighbour, a GRPO step at hidden 512
took more than twice as long with 2 threads as with 1. :class:`CpuThreads` measures, over each
training step, how much CPU the other processes took on this process's cores and what thread count
that leaves::

    foreign = (busy time of this process's cores - this process's CPU time) / wall time
    threads = clamp(round(cores - foreign), 1, the thread count torch started with)

The count changes only when two spans in a row call for the same new one: a brief burst of work
beside a run (one span) leaves it alone. Kernels may sum in another order with another count, so
each change can move a run's numbers in their last bits; a fixed count keeps them bitwise repeatable.

Busy time comes from ``/proc/stat`` (user, nice, system, irq, softirq and steal: a hypervisor's
stolen time is a core this process does not get either); where it is missing, the count stays.
The ceiling is what torch had when the session began, so ``OMP_NUM_THREADS``, ``torchrun``'s one
thread per process or an earlier ``torch.set_num_threads`` are never exceeded.

Several models that share nothing (one per agent) can also share the threads instead of taking turns
with all of them: :func:`side_by_side` runs one job per model at once, each on its own Python thread
with an equal share of torch's count (torch's count is per thread; its kernels let go of the GIL). A
few rows' products use two threads poorly, so two 512-wide models decoding 8 rows each finished in
0.57-0.84 s side by side on one thread each against 0.68-1.05 s one after the other on two.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import torch

#: Where Linux reports each core's time; USER_HZ ticks per second.
PROC_STAT = Path("/proc/stat")
#: Shortest span measured: ``/proc/stat`` counts in ticks of 10 ms, so shorter steps are pooled.
MIN_SPAN_S = 0.5
#: The fields of a ``cpuN`` line counted as busy (user nice system idle iowait irq softirq steal).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)

_T = TypeVar("_T")


def busy_seconds(stat_text: str, cores: Collection[int], ticks_per_s: float) -> float:
    """Seconds the ``cores`` (ids as in ``/proc/stat``'s ``cpuN`` lines) spent busy since boot."""
    ticks = 0
    for line in stat_text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cores:
            continue
        fields = rest.split()
        ticks += sum(int(fields[i]) for i in _BUSY_FIELDS if i < len(fields))
    return ticks / ticks_per_s


def free_cores_threads(cores: int, foreign: float, ceiling: int) -> int:
    """The thread count for ``cores`` cores of which other processes used ``foreign`` on average."""
    return max(1, min(ceiling, int(cores - foreign + 0.5)))


class CpuThreads:
    """Follows the cores left free by other processes with torch's thread count (see the module).

    Args:
        threads: a fixed count (set once, never changed), or 0 to follow the free cores.
        read_stat: returns ``/proc/stat``'s text (tests give their own); None when it cannot be read.
        clock, cpu_clock: wall time and this process's CPU time, in seconds.
    """

    def __init__(
        self,
        threads: int = 0,
        *,
        read_stat: Callable[[], str | None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.process_time,
    ) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0 (0 = follow the free cores), got {threads}")
        self.initial = torch.get_num_threads()
        self.ceiling = threads or self.initial
        self.follow = threads == 0
        self._read_stat = read_stat or _read_proc_stat
        self._clock, self._cpu_clock = clock, cpu_clock
        self._cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self._ticks_per_s = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        if threads:
            torch.set_num_threads(threads)
        self._start = self._sample() if self.follow else None
        self._wanted = self.ceiling  # what the last span called for

    @property
    def threads(self) -> int:
        """The count torch computes with now."""
        return torch.get_num_threads()

    def _sample(self) -> tuple[float, float, float] | None:
        text = self._read_stat()
        if text is None or not self._cores:
            return None
        try:
            busy = busy_seconds(text, self._cores, self._ticks_per_s)
        except (ValueError, IndexError):
            return None  # a /proc/stat this parser does not know: keep the count rather than fail a step
        return self._clock(), self._cpu_clock(), busy

    def adjust(self) -> int:
        """End a span (a training step, or several short ones) and set the count for the next.
        Returns the count in use."""
        if not self.follow or self._start is None:
            return self.threads
        now = self._sample()
        if now is None:
            return self.threads
        wall = now[0] - self._start[0]
        if wall < MIN_SPAN_S:
            return self.threads
        own, busy = now[1] - self._start[1], now[2] - self._start[2]
        foreign = max(0.0, busy - own) / wall
        self._start = now
        wanted = free_cores_threads(len(self._cores), foreign, self.ceiling)
        current = torch.get_num_threads()
        if wanted != current and wanted == self._wanted:
            torch.set_num_threads(wanted)
            current = wanted
        self._wanted = wanted
        return current

    def restore(self) -> None:
        """Give torch back the count it had before."""
        torch.set_num_threads(self.initial)


def _read_proc_stat() -> str | None:
    try:
        return PROC_STAT.read_text()
    except OSError:
        return None


def independent_cpu_models(models: Sequence[torch.nn.Module]) -> bool:
    """True for several models, all on CPU, no two holding the same parameter or buffer (separate
    policies, not adapters over one base): work on one cannot touch another.

    A model that runs modules it does not register (an adapter view runs the base it shares with the
    other agents' views, and switches which adapter is active in it) names them with a method
    ``unregistered_modules()``; their tensors count as the model's."""
    if len(models) < 2:
        return False
    seen: set[int] = set()
    for model in models:
        unregistered = getattr(model, "unregistered_modules", None)
        modules = [model, *(unregistered() if callable(unregistered) else ())]
        tensors = [tensor for module in modules for tensor in (*module.parameters(), *module.buffers())]
        if any(tensor.device.type != "cpu" for tensor in tensors):
            return False
        ids = {id(tensor) for tensor in tensors}
        if ids & seen:
            return False
        seen |= ids
    return True


def thread_share(jobs: int) -> int:
    """The torch threads each of ``jobs`` jobs runs with in :func:`side_by_side`: an equal share
    when they run at once, every thread when they run one after the other."""
    threads = torch.get_num_threads()
    workers = min(jobs, threads)
    return threads // workers if workers >= 2 else threads


def side_by_side(jobs: Sequence[Callable[[], _T]]) -> list[_T]:
    """Every job's result, in order, the jobs run at once on as many Python threads as torch has
    threads (at most one per job), each with an equal share of them; with one torch thread, one
    after the other here. The first exception a job raises is raised here once all have ended.

    Only for jobs that touch disjoint tensors (see :func:`independent_cpu_models`) and make no
    collective call: their order across threads is not fixed.
    """
    if min(len(jobs), torch.get_num_threads()) < 2:
        return [job() for job in jobs]
    share = thread_share(len(jobs))

    def run(job: Callable[[], _T]) -> _T:
        torch.set_num_threads(share)  # this thread's count only
        return job()

    futures = [_pool().submit(run, job) for job in jobs]
    errors = [future.exception() for future in futures]
    first = next((error for error in errors if error is not None), None)
    if first is not None:
        raise first
    return [future.result() for future in futures]


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    # One pool for the process: its threads keep their OpenMP teams from one call to the next.
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max(2, os.cpu_count() or 2), thread_name_prefix="mrlm-model")
        return _POOL
