"""How many threads torch computes with on CPU: as many as the cores other processes leave free.

torch starts with one compute thread per core and every operation waits at a barrier for all of
them. When another process keeps one of the cores busy, the thread that shares its core runs in
slices and each barrier waits for it: on 2 cores with one busy neighbour, a GRPO step at hidden 512
took more than twice as long with 2 threads as with 1. :class:`CpuThreads` measures, over each
training step, how much CPU the other processes took on this process's cores and sets torch's
thread count for the next step::

    foreign = (busy time of this process's cores - this process's CPU time) / wall time
    threads = clamp(round(cores - foreign), 1, the thread count torch started with)

Busy time comes from ``/proc/stat`` (user, nice, system, irq, softirq and steal: a hypervisor's
stolen time is a core this process does not get either); where it is missing, the count stays.
The ceiling is what torch had when the session began, so ``OMP_NUM_THREADS``, ``torchrun``'s one
thread per process or an earlier ``torch.set_num_threads`` are never exceeded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from pathlib import Path

import torch

#: Where Linux reports each core's time; USER_HZ ticks per second.
PROC_STAT = Path("/proc/stat")
#: Shortest span measured: ``/proc/stat`` counts in ticks of 10 ms, so shorter steps are pooled.
MIN_SPAN_S = 0.5
#: The fields of a ``cpuN`` line counted as busy (user nice system idle iowait irq softirq steal).
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


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

    @property
    def threads(self) -> int:
        """The count torch computes with now."""
        return torch.get_num_threads()

    def _sample(self) -> tuple[float, float, float] | None:
        text = self._read_stat()
        if text is None or not self._cores:
            return None
        return self._clock(), self._cpu_clock(), busy_seconds(text, self._cores, self._ticks_per_s)

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
        chosen = free_cores_threads(len(self._cores), foreign, self.ceiling)
        if chosen != torch.get_num_threads():
            torch.set_num_threads(chosen)
        return chosen

    def restore(self) -> None:
        """Give torch back the count it had before."""
        torch.set_num_threads(self.initial)


def _read_proc_stat() -> str | None:
    try:
        return PROC_STAT.read_text()
    except OSError:
        return None
