"""The sandbox: run untrusted Python in a fresh, limited process and report what happened.

This backend starts ``python -I -S`` per execution in a new session with resource limits, a fresh
scratch directory and a minimal environment, and kills the whole process group at the deadline.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping

from mrlm.envs.sandbox.api import ExecutionResult, IsolationReport, Limits, Status


class Sandbox:
    """Runs Python source under :class:`Limits`, never in the caller's process. Thread-safe.

    Args:
        limits: default limits of each execution.
        python: the interpreter that runs the code (this one by default).
    """

    def __init__(self, limits: Limits | None = None, *, python: str = sys.executable) -> None:
        self.limits = limits or Limits()
        self.python = python

    @property
    def isolation(self) -> IsolationReport:
        return IsolationReport(
            separate_process=True,
            rlimits=True,
            user_namespace=False,
            network_namespace=False,
            pid_namespace=False,
            seccomp=False,
            warnings=("subprocess backend: no namespaces or seccomp",),
        )

    def run(
        self,
        source: str,
        *,
        stdin: str = "",
        files: Mapping[str, str] | None = None,
        limits: Limits | None = None,
    ) -> ExecutionResult:
        """Run ``source`` as a script; ``files`` are written into its scratch directory first."""
        limits = limits or self.limits
        scratch = tempfile.mkdtemp(prefix="mrlm-sandbox-")
        try:
            for name, text in (files or {}).items():
                path = os.path.realpath(os.path.join(scratch, name))
                if not path.startswith(scratch + os.sep):
                    raise ValueError(f"file name {name!r} leaves the scratch directory")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
            with open(os.path.join(scratch, "main.py"), "w", encoding="utf-8") as handle:
                handle.write(source)
            return self._execute(scratch, stdin, limits)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _execute(self, scratch: str, stdin: str, limits: Limits) -> ExecutionResult:
        def apply_limits() -> None:
            os.setsid()
            cpu = max(1, int(limits.cpu_time_s + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        start = time.monotonic()
        try:
            process = subprocess.Popen(
                [self.python, "-I", "-S", "main.py"],
                cwd=scratch,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={"PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8"},
                preexec_fn=apply_limits,
            )
        except OSError as error:
            return ExecutionResult(
                Status.SANDBOX_ERROR, None, None, "", "", 0.0, message=f"could not start: {error}"
            )

        out = _CappedReader(process.stdout, limits.output_bytes)
        err = _CappedReader(process.stderr, limits.output_bytes)
        feeder = threading.Thread(target=_feed, args=(process, stdin), daemon=True)
        feeder.start()
        deadline = start + limits.wall_time_s
        timed_out = over_output = False
        while process.poll() is None:
            if time.monotonic() > deadline:
                timed_out = True
                break
            if out.overflowed or err.overflowed:
                over_output = True
                break
            time.sleep(0.002)
        _kill_group(process.pid)
        process.wait()
        out.join()
        err.join()
        duration = time.monotonic() - start
        return _classify(process.returncode, out, err, duration, timed_out, over_output, limits)


class _CappedReader:
    """Drains a pipe in a thread, keeping at most ``cap`` bytes."""

    def __init__(self, pipe: object, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.overflowed = False
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: object) -> None:
        read = pipe.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            room = self.cap - len(self.data)
            if len(chunk) > room:
                self.data += chunk[:room]
                self.overflowed = True
            else:
                self.data += chunk
        pipe.close()  # type: ignore[attr-defined]

    def join(self) -> None:
        self._thread.join(timeout=5)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _feed(process: subprocess.Popen[bytes], stdin: str) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(stdin.encode())
        process.stdin.close()
    except OSError:  # the program exited or closed stdin first
        pass


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _classify(
    returncode: int,
    out: _CappedReader,
    err: _CappedReader,
    duration: float,
    timed_out: bool,
    over_output: bool,
    limits: Limits,
) -> ExecutionResult:
    stdout, stderr = out.text(), err.text()
    truncated = out.overflowed or err.overflowed
    exit_code = returncode if returncode >= 0 else None
    signum = -returncode if returncode < 0 else None
    if timed_out or signum == signal.SIGXCPU:
        status, message = Status.TIMEOUT, f"time limit exceeded ({limits.wall_time_s:g} s)"
    elif over_output:
        status, message = Status.OUTPUT_LIMIT, f"output limit exceeded ({limits.output_bytes} bytes)"
    elif "MemoryError" in stderr:
        status, message = Status.MEMORY, f"memory limit exceeded ({limits.memory_bytes >> 20} MiB)"
    elif signum is not None:
        status, message = Status.KILLED, f"killed by signal {signal.Signals(signum).name}"
    elif exit_code == 0:
        status, message = Status.OK, "ok"
    else:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {exit_code}"
        status, message = Status.ERROR, last
    return ExecutionResult(status, exit_code, signum, stdout, stderr, duration, truncated, message)
