"""A pool of worker processes shared by the threads of one process.

Each worker serves one execution at a time; a thread leases a free one for the length of a call, so
replies can never be mixed up. Workers start together on first use, and a worker found dead (killed,
crashed) is replaced on the spot, the request retried once on the new one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import queue
import site
import sys
import sysconfig
import tempfile
import threading
import weakref
from typing import Any

from mrlm.envs.sandbox.api import IsolationReport
from mrlm.envs.sandbox.forkserver.plan import PER_PROCESS, WorkerConfig
from mrlm.envs.sandbox.worker import WorkerError, WorkerGone, WorkerProcess

#: Host uids from here on are used for sandboxed programs when the caller is root (see
#: :mod:`mrlm.envs.sandbox.forkserver.namespaces`): far above the uids systems give their users.
UID_BASE = 0x5EED0000
#: Modules the workers import up front, so programs find them loaded: standard-library ones, and
#: the harness the code envs run as their program (itself standard library only). Few and
#: small: every execution pays for the worker's size when it is forked and when it exits. Not random
#: or threading: they run after-fork hooks, which every execution would pay for too.
PRELOAD = (
    "bisect",
    "collections",
    "functools",
    "heapq",
    "itertools",
    "json",
    "math",
    "operator",
    "re",
    "string",
    "typing",
    # The code envs' test harness (standard library only): every test execution would otherwise
    # define its classes and functions anew, which costs more than the rest of the execution.
    "mrlm.envs.code._harness",
)
MAX_WORKERS = 64
_worker_numbers = itertools.count()  # thread-safe enough: next() on a count is atomic in CPython
_START_TIMEOUT_S = 60.0


class WorkerPool:
    """``size`` workers started with ``python``; ``disable`` lists layers to leave off."""

    def __init__(self, size: int, python: str, disable: tuple[str, ...]) -> None:
        if not 1 <= size <= MAX_WORKERS:
            raise ValueError(f"workers must be between 1 and {MAX_WORKERS}, got {size}")
        self.size = size
        self.owner_pid = os.getpid()
        self._python = python
        self._disable = disable
        self._pyseccomp = _find_pyseccomp()
        self._hide = caller_import_paths()
        self._workers: list[WorkerProcess | None] = [None] * size
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(size):
            self._free.put(slot)
        self._start_lock = threading.Lock()
        self._closed = False
        self.report: IsolationReport | None = None
        # Stops the workers when the pool is collected or the process exits, whichever comes first.
        self._finalizer = weakref.finalize(self, _close_workers, self._workers, self.owner_pid)

    def start(self) -> IsolationReport:
        """Start every worker at once (first call only) and return their isolation report.

        Raises:
            WorkerError: no worker could start.
        """
        with self._start_lock:
            if self._closed:
                raise RuntimeError("the sandbox is closed")
            if self.report is not None:
                return self.report
            spawned: list[tuple[int, WorkerProcess]] = []
            errors: list[str] = []
            for slot in range(self.size):
                try:
                    spawned.append((slot, self._spawn()))
                except OSError as error:
                    errors.append(f"cannot start {self._python}: {error}")
            ready: dict[str, Any] | None = None
            for slot, worker in spawned:
                try:
                    ready = worker.wait_ready(_START_TIMEOUT_S)
                    self._workers[slot] = worker
                except WorkerError as error:
                    errors.append(str(error))
            if ready is None:
                raise WorkerError(errors[0] if errors else "no worker started")
            self.report = report_from(ready)
            return self.report

    def execute(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Run one request on a free worker, waiting for one if all are busy.

        Raises:
            WorkerError: no worker could run it (start-up failed, the worker died twice, or hung).
        """
        self.start()
        slot = self._free.get()
        try:
            for attempt in range(2):
                worker = self._live_worker(slot)
                try:
                    return worker.call(request, timeout)
                except WorkerGone:
                    self._workers[slot] = None
                    if attempt:
                        raise
                except WorkerError:
                    self._workers[slot] = None
                    raise
            raise AssertionError("unreachable")
        finally:
            self._free.put(slot)

    def pids(self) -> list[int]:
        """Host pids of the live workers' first processes and of their fork servers."""
        pids: list[int] = []
        for worker in list(self._workers):
            if worker is not None and worker.alive():
                pids.append(worker.pid)
                if worker.server_pid is not None:
                    pids.append(worker.server_pid)
        return pids

    def close(self) -> None:
        """Stop every worker; the pool cannot be used afterwards."""
        with self._start_lock:
            self._closed = True
        self._finalizer()

    def _live_worker(self, slot: int) -> WorkerProcess:
        worker = self._workers[slot]
        if worker is not None and worker.alive():
            return worker
        if worker is not None:
            worker.kill()
        if self._closed:
            raise RuntimeError("the sandbox is closed")
        try:
            worker = self._spawn()
        except OSError as error:
            raise WorkerError(f"cannot start {self._python}: {error}") from error
        worker.wait_ready(_START_TIMEOUT_S)
        self._workers[slot] = worker
        return worker

    def _spawn(self) -> WorkerProcess:
        config = WorkerConfig(
            # A worker's sandbox uid must be its own (see namespaces): distinct per process and per
            # worker started in it, whichever pool it belongs to.
            slot=(os.getpid() % 16384) * MAX_WORKERS + next(_worker_numbers) % MAX_WORKERS,
            uid_base=UID_BASE,
            disable=self._disable,
            pyseccomp=self._pyseccomp,
            tmpdir=tempfile.gettempdir(),
            preload=PRELOAD,
            hide=self._hide,
        )
        return WorkerProcess(self._python, config)


def _close_workers(workers: list[WorkerProcess | None], owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        return  # a forked child: the workers are its parent's
    for slot, worker in enumerate(workers):
        workers[slot] = None
        if worker is not None:
            with contextlib.suppress(Exception):
                worker.close()


def report_from(ready: dict[str, Any]) -> IsolationReport:
    """The isolation report of a worker's start-up message."""
    layers = ready["layers"]
    return IsolationReport(
        separate_process=True,
        rlimits=True,
        user_namespace=bool(layers["user_namespace"]),
        network_namespace=bool(layers["network_namespace"]),
        pid_namespace=bool(layers["pid_namespace"]),
        seccomp=bool(layers["seccomp"]),
        warnings=tuple(ready.get("warnings", ())),
        mount_namespace=bool(layers["mount_namespace"]),
        ipc_namespace=bool(layers["ipc_namespace"]),
        read_only_filesystem=bool(layers["read_only_filesystem"]),
        unprivileged_user=bool(layers["unprivileged_user"]),
        backend="forkserver",
        private_filesystem=bool(layers["private_filesystem"]),
        memory_cgroup=bool(layers["memory_cgroup"]),
        memory_bound=str(ready.get("memory_bound", PER_PROCESS)),
    )


def caller_import_paths() -> tuple[str, ...]:
    """The real paths of this process's import directories that are not the standard library:
    site-packages (the interpreter's, the user's, a virtual environment's) and source trees."""
    stdlib = {os.path.realpath(sysconfig.get_path(name)) for name in ("stdlib", "platstdlib")}
    candidates = {*sys.path, *site.getsitepackages(), site.getusersitepackages()}
    found = set()
    for path in candidates:
        if not path:  # "" in sys.path: the working directory, not an import path of ours
            continue
        real = os.path.realpath(path)
        in_stdlib = any(real == lib or real.startswith(lib + os.sep) for lib in stdlib)
        if os.path.isdir(real) and not in_stdlib:
            found.add(real)
    return tuple(sorted(found))


def _find_pyseccomp() -> str | None:
    """Where pyseccomp is, without importing it here (the caller needs no libseccomp)."""
    try:
        spec = importlib.util.find_spec("pyseccomp")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None
