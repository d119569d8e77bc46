"""Several server processes on one port: ``mrlm-envs serve --processes N`` (Linux).

A Python process runs its handlers under one interpreter lock, so one server process uses about one
core however many threads it has. :func:`start_processes` starts ``N`` child processes, each a whole
:class:`~mrlm.envs.server.server.EnvServer` (its own sessions, limits, health service and reaper),
all listening on the same port with ``SO_REUSEPORT``: the Linux kernel hands each new TCP connection
to one of them.

A session lives in the process that opened it, so every call of a session must reach that process.
A gRPC channel sends all its calls over one connection, so they do as long as the client's connection
lasts; the clients of :mod:`mrlm.envs.remote` open a connection per env, so the envs of one trainer
spread over the processes. A call that reaches a process without its session (its connection broke
and was made again, to another process) fails with NOT_FOUND naming both processes, and the client's
next ``reset()`` opens a new session, as after a server restart.

Limits hold per process: ``N`` processes hold up to ``N`` times ``--max-sessions`` sessions and ``N``
times ``--max-kwargs-bytes-total``, admit ``N`` times ``--max-streams`` streams and run ``N`` times
``--workers`` env calls at once; the limits of one request (``--max-message-bytes``,
``--max-action-chars``, ``--max-kwargs-bytes``, ``--call-timeout-s``) are the same in every process.

The parent only supervises. It holds the port from before the first child binds it until every child
listens (with port 0, that is how it picks the port), returns (or announces the server) once every
child is ready, replaces a child that dies (its sessions are lost, as in a restart), and on
:meth:`ProcessGroup.stop` stops every child gracefully, killing those that outlive the grace period. A
child stops on SIGTERM (then it is not replaced; the group ends with its last child) and ignores
SIGINT, which a terminal's Ctrl-C sends to the whole group: the parent acts on it. A child whose parent
dies stops by itself, so no server process outlives the server.

Other systems refuse ``processes > 1``: macOS and the BSDs accept ``SO_REUSEPORT`` but do not spread
connections over the sockets sharing a port, and Windows has no such option.
"""

from __future__ import annotations

import dataclasses
import errno
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from types import FrameType

from mrlm.envs.server.allowed import Allowances
from mrlm.envs.server.catalog import Catalog
from mrlm.envs.server.config import ServerConfig
from mrlm.envs.server.server import EnvServer, bracketed, security_note

__all__ = ["READY_TIMEOUT_S", "ProcessGroup", "check_reuseport", "run_processes", "start_processes"]

_log = logging.getLogger(__name__)

#: Seconds a child process gets to import the envs and listen.
READY_TIMEOUT_S = 120.0

#: A process slot replaced more than ``_MAX_RESTARTS`` times within ``_RESTART_WINDOW_S`` seconds
#: cannot stay up (a crash at every start): the server stops instead of restarting it forever.
_MAX_RESTARTS = 3
_RESTART_WINDOW_S = 60.0

#: How often waiting loops look whether they were asked to stop, in seconds.
_POLL_S = 0.25

#: Children are started afresh: gRPC's threads do not survive a fork.
_CONTEXT = multiprocessing.get_context("spawn")


class Interrupted(Exception):
    """The start was cancelled (SIGINT or SIGTERM) before every process was ready."""


def check_reuseport() -> None:
    """Raise ``OSError`` unless this system spreads connections over processes sharing a port."""
    if not sys.platform.startswith("linux"):
        raise OSError(
            f"--processes above 1 needs Linux: on {sys.platform}, SO_REUSEPORT does not spread "
            "connections over the processes sharing a port; run one server per port and give "
            "clients every address (grpc://host:port1,host:port2/ENV_ID)"
        )
    if not hasattr(socket, "SO_REUSEPORT"):
        raise OSError("--processes above 1 needs SO_REUSEPORT, which this Python build lacks")


class _Child:
    """One server process of the group."""

    def __init__(self, index: int, process: BaseProcess, messages: multiprocessing.connection.Connection):
        self.index = index
        self.process = process
        self.messages = messages
        self.pid = 0  # once it listens
        self.stopped = False  # exited when told to: not replaced


class ProcessGroup:
    """``config.processes`` server processes sharing one port. Start it with :func:`start_processes`.

    Attributes:
        config: the settings every process runs with (``port`` is the actual port).
        port: the port they share.
        address: ``host:port`` to give clients.
        env_ids: the ids the processes host.
        failure: why the group stopped on its own (a process that cannot stay up), else None.
    """

    def __init__(
        self, config: ServerConfig, *, imports: Sequence[str] = (), log_level: int | None = None
    ) -> None:
        self.config = config
        self.port = config.port
        self.address = f"{bracketed(config.host)}:{config.port}"
        self.env_ids: list[str] = []
        self.failure: str | None = None
        self._imports = tuple(imports)
        self._log_level = logging.getLogger().getEffectiveLevel() if log_level is None else log_level
        self._children: list[_Child] = []
        self._restarts: dict[int, list[float]] = {}
        self._lock = threading.Lock()  # guards _children against stop() during a replacement
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._supervisor: threading.Thread | None = None

    @property
    def pids(self) -> list[int]:
        """The process id of each server process, in order (0 for one being replaced, until it listens)."""
        with self._lock:
            return [child.pid for child in self._children]

    def start(
        self, ready_timeout_s: float = READY_TIMEOUT_S, interrupt: threading.Event | None = None
    ) -> None:
        """Start every process and return once each listens.

        Raises:
            OSError: a process failed to start (its error, in one line), or did not listen in time;
                every process started is stopped first.
            Interrupted: ``interrupt`` was set before every process was ready.
        """
        reservation = _reserve(self.config.host, self.config.port)
        try:
            self.port = reservation.getsockname()[1]
            self.config = dataclasses.replace(self.config, port=self.port)
            self.address = f"{bracketed(self.config.host)}:{self.port}"
            deadline = time.monotonic() + ready_timeout_s
            for index in range(self.config.processes):
                # Each start costs a fresh interpreter: a signal during a long start stops it here.
                if (interrupt is not None and interrupt.is_set()) or self._stopping.is_set():
                    raise Interrupted(
                        f"the server was asked to stop while starting its processes ({index} of "
                        f"{self.config.processes} started)"
                    )
                with self._lock:
                    self._children.append(self._spawn(index))
            with self._lock:
                children = list(self._children)
            for child in children:
                self._await_ready(child, deadline, ready_timeout_s, interrupt)
        except BaseException:
            self._kill_all()
            raise
        finally:
            reservation.close()  # the children hold the port now
        self._supervisor = threading.Thread(target=self._supervise, name="mrlm-supervisor", daemon=True)
        self._supervisor.start()
        _log.info("%d server processes listen on %s: pids %s", len(children), self.address, self.pids)

    def stop(self) -> None:
        """Stop every process gracefully (SIGTERM: as a single server, each gives the calls in flight
        ``config.grace_s`` seconds, then closes its sessions' envs), then kill any still running past
        that. Idempotent; returns when every process exited."""
        self._stopping.set()
        with self._lock:
            if self._stopped.is_set():
                return
            for child in self._children:
                if child.process.is_alive():
                    child.process.terminate()
            # A child ends its calls in flight within the grace, closes its envs within as long again.
            deadline = time.monotonic() + 2 * self.config.grace_s + 10.0
            for child in self._children:
                child.process.join(timeout=max(0.0, deadline - time.monotonic()))
            for child in self._children:
                if child.process.is_alive():
                    _log.warning(
                        "server process %d (pid %d) outlived the grace period: killed", child.index, child.pid
                    )
                    child.process.kill()
                    child.process.join(timeout=5.0)
                child.messages.close()
            self._stopped.set()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(timeout=5.0)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the group is stopped (or ``timeout_s`` passes); True if stopped."""
        return self._stopped.wait(timeout_s)

    def __enter__(self) -> ProcessGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------------------

    def _spawn(self, index: int) -> _Child:
        receiver, sender = _CONTEXT.Pipe(duplex=False)
        process = _CONTEXT.Process(
            target=_child_main,
            args=(self.config, index, self._imports, self._log_level, sender),
            name=f"mrlm-envs-server-{index}",
        )
        process.start()
        sender.close()  # the child holds its end: a child that dies closes the pipe
        return _Child(index, process, receiver)

    def _await_ready(
        self, child: _Child, deadline: float, timeout_s: float, interrupt: threading.Event | None
    ) -> None:
        """Wait for the child's word that it listens (until ``deadline``, ``timeout_s`` after the start);
        OSError with its error otherwise."""
        name = f"server process {child.index}"
        while True:
            if (interrupt is not None and interrupt.is_set()) or self._stopping.is_set():
                raise Interrupted(f"{name} was not ready when the server was asked to stop")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OSError(f"{name} did not listen within {timeout_s:g} s")
            ready = multiprocessing.connection.wait(
                [child.messages, child.process.sentinel], timeout=min(remaining, _POLL_S)
            )
            if self._stopping.is_set():
                raise Interrupted(f"{name} was not ready when the server was asked to stop")
            if child.messages in ready or child.messages.poll():
                try:
                    kind, detail = child.messages.recv()
                except EOFError:
                    kind, detail = "error", ""
                if kind == "ready":
                    child.pid = int(detail)
                    return
                child.process.join(timeout=5.0)
                raise OSError(detail or f"{name} exited with code {child.process.exitcode} before listening")
            if child.process.sentinel in ready:
                child.process.join(timeout=5.0)
                raise OSError(f"{name} exited with code {child.process.exitcode} before listening")

    def _supervise(self) -> None:
        """Replace the processes that die; give up (and stop the group) on one that cannot stay up.

        A process that exits with code 0 was told to stop (a SIGTERM sent to it, or to the whole
        process group by a service manager): it is not replaced, and once none is left the group stops.
        """
        while not self._stopping.is_set():
            with self._lock:
                by_sentinel = {c.process.sentinel: c for c in self._children if not c.stopped}
            if not by_sentinel:
                _log.info("every server process stopped")
                threading.Thread(target=self.stop, name="mrlm-stop", daemon=True).start()
                return
            ended = multiprocessing.connection.wait(list(by_sentinel), timeout=_POLL_S)
            for sentinel in ended:
                if self._stopping.is_set():
                    return
                assert isinstance(sentinel, int)
                child = by_sentinel[sentinel]
                child.process.join(timeout=5.0)
                if child.process.exitcode == 0:
                    _log.info("server process %d (pid %d) stopped", child.index, child.pid)
                    child.stopped = True
                    continue
                try:
                    self._replace(child)
                except Interrupted:
                    return
                except OSError as error:
                    if self._stopping.is_set():  # the replacement was stopped with the rest
                        return
                    self.failure = f"a server process cannot stay up: {error}"
                    _log.error("%s; stopping the server", self.failure)
                    threading.Thread(target=self.stop, name="mrlm-stop", daemon=True).start()
                    return

    def _replace(self, dead: _Child) -> None:
        dead.process.join(timeout=5.0)
        now = time.monotonic()
        recent = [t for t in self._restarts.get(dead.index, []) if now - t < _RESTART_WINDOW_S]
        if len(recent) >= _MAX_RESTARTS:
            raise OSError(
                f"server process {dead.index} exited with code {dead.process.exitcode}, "
                f"the {len(recent) + 1}th time within {_RESTART_WINDOW_S:g} s"
            )
        self._restarts[dead.index] = [*recent, now]
        _log.warning(
            "server process %d (pid %d) exited with code %s; its sessions are lost. Starting another",
            dead.index,
            dead.pid,
            dead.process.exitcode,
        )
        with self._lock:
            if self._stopping.is_set():
                return
            child = self._spawn(dead.index)
            self._children[self._children.index(dead)] = child
            dead.messages.close()
        self._await_ready(child, time.monotonic() + READY_TIMEOUT_S, READY_TIMEOUT_S, None)
        _log.info("server process %d is back (pid %d)", child.index, child.pid)

    def _kill_all(self) -> None:
        """Kill every process at once (a start that failed)."""
        self._stopping.set()
        with self._lock:
            for child in self._children:
                if child.process.is_alive():
                    child.process.kill()
                child.process.join(timeout=5.0)
                child.messages.close()
            self._stopped.set()


def start_processes(
    config: ServerConfig,
    *,
    imports: Sequence[str] = (),
    log_level: int | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
    interrupt: threading.Event | None = None,
) -> ProcessGroup:
    """Start ``config.processes`` server processes on one port and return once each listens.

    Args:
        config: the settings of every process; ``port=0`` picks a free port for all of them.
        imports: modules each process imports first (those registering the envs to host).
        log_level: the logging level of the processes (this process's root level when None).
        ready_timeout_s: how long the processes get to listen.
        interrupt: an event that cancels the start (raising :class:`Interrupted`) when set.

    Raises:
        OSError: not Linux, the port is taken, or a process failed to start (one line saying why).
        UnknownEnvError, ValueError: the config names unknown envs or bad allowances (as ``serve()``).

    Example:
        >>> group = start_processes(ServerConfig(envs=("mrlm/Math-v0",), port=0, processes=2))
        >>> len(group.pids)
        2
        >>> group.stop()
    """
    check_reuseport()
    # Refuse what one server would refuse here, before any process starts.
    catalog = Catalog(
        config.envs,
        max_action_chars=config.max_action_chars,
        allowances=Allowances.of(config.allow_records_dir, config.allow_url_host),
    )
    group = ProcessGroup(config, imports=imports, log_level=log_level)
    group.env_ids = catalog.ids
    group.start(ready_timeout_s, interrupt)
    return group


def run_processes(
    config: ServerConfig,
    announce: Callable[[str], None] = print,
    *,
    imports: Sequence[str] = (),
    log_level: int | None = None,
) -> None:
    """Serve with ``config.processes`` processes until SIGTERM or SIGINT (``mrlm-envs serve``).

    ``announce`` receives one line once every process listens. Raises ``OSError`` when the server
    cannot start, or stopped because a process could not stay up.
    """
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            group = start_processes(config, imports=imports, log_level=log_level, interrupt=stop)
        except Interrupted:
            return
        try:
            announce(
                f"mrlm-envs: serving {len(group.env_ids)} envs on {group.address} "
                f"({security_note(config)}; {config.processes} processes)"
            )
            while not stop.wait(_POLL_S) and not group.wait(0):
                pass
        finally:
            group.stop()
        if group.failure is not None:
            raise OSError(group.failure)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# In the child process -------------------------------------------------------------------------------


def _child_main(
    config: ServerConfig,
    index: int,
    imports: tuple[str, ...],
    log_level: int,
    messages: multiprocessing.connection.Connection,
) -> None:
    """One server process: listen, say so, serve until SIGTERM or until the parent dies."""
    # A Ctrl-C in the terminal reaches every process of the group: the parent alone acts on it (it
    # stops its children with SIGTERM), so that no child stops on its own first and looks dead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=log_level, format=f"%(asctime)s %(levelname)s %(name)s [process {index}]: %(message)s"
    )
    name = f"process {index} of {config.processes}, pid {os.getpid()}"
    try:
        for module in imports:
            importlib.import_module(module)
        server = EnvServer(config, reuse_port=True, process=name).start()
    except BaseException as error:  # said to the parent, which reports it
        messages.send(("error", f"server process {index}: {_one_line(error)}"))
        messages.close()
        sys.exit(1)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    threading.Thread(target=_stop_when_orphaned, args=(stop,), name="mrlm-orphan-watch", daemon=True).start()
    try:
        messages.send(("ready", os.getpid()))
        stop.wait()
    except OSError:  # the parent is gone already
        pass
    finally:
        server.stop()
        messages.close()


def _stop_when_orphaned(stop: threading.Event) -> None:
    """Set ``stop`` when the parent process ends (however it ends: a kill leaves no time to tell us)."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        multiprocessing.connection.wait([parent.sentinel])
        _log.warning("the supervising process is gone: stopping")
        stop.set()


# Helpers ---------------------------------------------------------------------------------------------


def _reserve(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` with ``SO_REUSEPORT`` (the port the children will share),
    held until they listen; with port 0, the free port the system picks.

    A port in use by any other socket, even one sharing it, is refused: another server on the port would
    receive a share of the connections."""
    where = f"{bracketed(host)}:{port}"
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as error:
        raise OSError(f"cannot listen on {where}: {error.strerror or error}") from None
    if port:
        probe = socket.socket(family, kind, proto)  # without SO_REUSEPORT: fails on any user of the port
        try:
            probe.bind(sockaddr)
        except OSError as error:
            reason = "the port is in use" if error.errno == errno.EADDRINUSE else error.strerror or str(error)
            raise OSError(f"cannot listen on {where}: {reason}") from None
        finally:
            probe.close()
    reservation = socket.socket(family, kind, proto)
    try:
        reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reservation.bind(sockaddr)
    except OSError as error:
        reservation.close()
        raise OSError(f"cannot listen on {where}: {error.strerror or error}") from None
    return reservation


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return (
        text if isinstance(error, (OSError, ValueError, LookupError)) else f"{type(error).__name__}: {text}"
    )
