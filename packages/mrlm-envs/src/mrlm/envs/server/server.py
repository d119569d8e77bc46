"""Starting and stopping an env server: gRPC, health, reflection, the reaper, signals.

``serve(config)`` returns a running :class:`EnvServer` (port 0 binds a free port, for tests);
``run(config)`` is what ``mrlm-envs serve`` calls: it serves until SIGTERM or SIGINT, then shuts down
gracefully. With ``config.processes`` above 1, ``run`` starts that many server processes on one port
instead (see ``processes``).

The server always answers: open streams are capped (``max_streams``) below the number of handler
threads, so that unary calls and health checks keep threads of their own; the health service never
blocks (``health``); the reaper closes sessions that idled too long or whose client disconnected.

Shutdown order: the health service turns NOT_SERVING, the server stops taking calls and gives those
in flight ``grace_s`` seconds, then every session's env is closed, handlers still waiting for an env
call give up (the call goes on in its daemon worker, so the process can exit), and the worker threads
exit.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import ssl
import stat
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from mrlm.envs.server.allowed import Allowances
from mrlm.envs.server.auth import TokenInterceptor
from mrlm.envs.server.catalog import Catalog
from mrlm.envs.server.config import ServerConfig
from mrlm.envs.server.connections import connected_peers
from mrlm.envs.server.health import HealthService
from mrlm.envs.server.runner import Runner
from mrlm.envs.server.servicer import EnvServicer
from mrlm.envs.server.sessions import SessionStore
from mrlm.envs.server.streams import StreamBudget
from mrlm.proto.v1 import env_pb2, env_pb2_grpc

__all__ = ["SERVICE_NAME", "EnvServer", "read_tls_pair", "run", "serve"]

_log = logging.getLogger(__name__)

#: Full name of the service, as health checks and reflection know it.
SERVICE_NAME: str = env_pb2.DESCRIPTOR.services_by_name["EnvService"].full_name
_HEALTH_SERVICE: str = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name

#: How often the reaper looks for clients that disconnected, in seconds.
_DISCONNECT_POLL_S = 0.5
#: The shortest interval between a client's pings that the server accepts during a call without data:
#: well below the clients' default (``mrlm.envs.remote.connection.DEFAULT_KEEPALIVE_S``); a ping a
#: second costs the server nothing, and a client pinging faster has its connection closed.
MIN_CLIENT_PING_INTERVAL_MS = 1_000


class EnvServer:
    """A running env server. Build it with :func:`serve`.

    Args:
        config: its settings (``config.processes`` is the business of ``processes``: one
            ``EnvServer`` is one process).
        reuse_port: share the port with other processes that set it too (``SO_REUSEPORT``); off, a
            second server on the same port fails to start instead of silently taking half the calls.
        process: how this process is named in errors and logs (``process 2 of 4, pid 4242``).

    Attributes:
        config: its settings.
        port: the port it listens on (the actual one when the config asked for 0).
        address: ``host:port`` to give clients.
        store: its open sessions.
        streams: the budget of open streams.
        health: the health service.
    """

    def __init__(self, config: ServerConfig, *, reuse_port: bool = False, process: str = "") -> None:
        self.config = config
        allowances = Allowances.of(config.allow_records_dir, config.allow_url_host)
        catalog = Catalog(config.envs, max_action_chars=config.max_action_chars, allowances=allowances)
        self.store = SessionStore(config.max_sessions, config.max_kwargs_bytes_total, process=process)
        self._runner = Runner(config.workers)
        self.servicer = EnvServicer(
            catalog, self.store, self._runner, config.call_timeout, config.max_kwargs_bytes
        )
        self.health = HealthService(("", SERVICE_NAME))
        self.streams = StreamBudget(config.max_streams)
        # The token check comes first: a refused call never takes a place in the stream budget.
        interceptors = [*([TokenInterceptor(config.token)] if config.token else []), self.streams]
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=config.handler_threads, thread_name_prefix="mrlm-rpc"),
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", -1),
                # Share the port only when asked to (several processes of one server): otherwise a
                # second server on the same port would silently receive half the connections.
                ("grpc.so_reuseport", 1 if reuse_port else 0),
                # Clients ping every 10 s while a call is in flight, to notice a server that vanished
                # (see Connection's keepalive_s); gRPC's default answers frequent pings during a call
                # without data (a long env step) by closing the connection ("too many pings").
                ("grpc.http2.min_ping_interval_without_data_ms", MIN_CLIENT_PING_INTERVAL_MS),
            ],
        )
        env_pb2_grpc.add_EnvServiceServicer_to_server(self.servicer, self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, _HEALTH_SERVICE, reflection.SERVICE_NAME), self._server
        )
        try:
            self.port = self._bind(config)
        except BaseException:
            self._runner.shutdown()
            raise
        self.address = f"{bracketed(config.host)}:{self.port}"
        self._stop_reaper = threading.Event()
        self._reaper: threading.Thread | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    def start(self) -> EnvServer:
        """Start serving (and the reaper)."""
        self._server.start()
        if self.config.idle_timeout_s > 0 or self.config.disconnect_grace is not None:
            self._reaper = threading.Thread(target=self._reap, name="mrlm-reaper", daemon=True)
            self._reaper.start()
        _log.info("serving %d envs on %s", len(self.servicer.catalog.ids), self.address)
        return self

    def stop(self, grace_s: float | None = None) -> None:
        """Stop gracefully: calls in flight get ``grace_s`` seconds (the config's when None), then every
        session's env is closed (for at most as long again) and calls still running are given up on.
        Idempotent; returns when done."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            grace = self.config.grace_s if grace_s is None else grace_s
            self.health.shut_down()
            finished = self._server.stop(grace)
            # gRPC cancels the calls still open after the grace; a handler waiting for a slow env
            # call does not notice, so it is not waited for beyond the grace either.
            finished.wait(grace + 0.5)
            self._stop_reaper.set()
            if self._reaper is not None:  # let it finish closing what it took, before the workers go
                self._reaper.join(timeout=1.0)
            sessions = self.store.take_all()
            self.servicer.close_sessions(sessions, until=time.monotonic() + max(grace, 1.0))
            self._runner.release_waiters()
            finished.wait(2.0)
            self._runner.shutdown()
            self._stopped.set()
        _log.info("stopped; closed %d sessions", len(sessions))

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the server is stopped (or ``timeout_s`` passes); True if stopped."""
        return self._stopped.wait(timeout_s)

    def __enter__(self) -> EnvServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _bind(self, config: ServerConfig) -> int:
        where = f"{bracketed(config.host)}:{config.port}"
        try:
            if config.tls_cert is not None and config.tls_key is not None:
                key, chain = read_tls_pair(config.tls_cert, config.tls_key)
                port = self._server.add_secure_port(where, grpc.ssl_server_credentials([(key, chain)]))
            else:
                port = self._server.add_insecure_port(where)
        except RuntimeError:  # grpcio >= 1.60 raises where older releases returned 0
            port = 0
        if not port:
            why = "not an address of this machine, or the port is in use"
            if config.tls_cert is not None:  # gRPC logs its reason on stderr; a bad pair is the likely one
                why += ", or the TLS key does not belong to the certificate (gRPC's reason is logged above)"
            raise OSError(f"cannot listen on {where}: {why}")
        return int(port)

    def _reap(self) -> None:
        """Close the sessions that idled too long, and those whose client disconnected."""
        idle_timeout, grace = self.config.idle_timeout_s, self.config.disconnect_grace
        interval = min(max(idle_timeout / 4, 0.05), 10.0) if idle_timeout > 0 else 10.0
        if grace is not None:
            interval = min(interval, _DISCONNECT_POLL_S, grace / 2)
        while not self._stop_reaper.wait(interval):
            if idle_timeout > 0:
                self.servicer.close_sessions(self.store.take_idle(idle_timeout))
            peers = connected_peers() if grace is not None and len(self.store) else None
            if grace is not None and peers is not None:
                self.servicer.close_sessions(self.store.take_disconnected(peers, grace))


def serve(config: ServerConfig | None = None, **fields: Any) -> EnvServer:
    """Start a server in this process and return it running; ``fields`` override the config's
    (``port=0``...). Several processes: :func:`mrlm.envs.server.processes.start_processes`.

    Example:
        >>> server = serve(envs=("mrlm/Math-v0",), port=0)
        >>> server.port > 0
        True
        >>> server.stop()
    """
    config = ServerConfig(**fields) if config is None else dataclasses.replace(config, **fields)
    if config.processes > 1:
        raise ValueError(
            f"serve() runs one server in this process, not {config.processes}: "
            "use mrlm.envs.server.processes.start_processes"
        )
    return EnvServer(config).start()


#: The largest ``--tls-cert`` or ``--tls-key`` file read: a certificate chain is a few kilobytes.
MAX_TLS_FILE_BYTES = 1 << 20


def read_tls_pair(cert: str, key: str) -> tuple[bytes, bytes]:
    """The PEM private key and certificate chain of ``--tls-key`` and ``--tls-cert``, as gRPC takes them.

    Raises:
        OSError: a file cannot be read, or is not of the PEM kind it should be (a certificate chain,
            a private key), named in one line.
    """
    texts = []
    for flag, path, marker, kind in (
        ("--tls-key", key, b"PRIVATE KEY-----", "a PEM private key"),
        ("--tls-cert", cert, b"-----BEGIN CERTIFICATE-----", "a PEM certificate chain"),
    ):
        text = _read_small_file(flag, path)
        if marker not in text:
            raise OSError(f"{flag} {path!r} is not {kind}")
        texts.append(text)
    if b"ENCRYPTED" in texts[0]:  # "BEGIN ENCRYPTED PRIVATE KEY" or "Proc-Type: 4,ENCRYPTED"
        raise OSError(f"--tls-key {key!r} is encrypted: the server needs the key without a passphrase")
    # OpenSSL says what gRPC only logs, such as a key of another certificate. The empty passphrase
    # keeps OpenSSL from ever prompting on the terminal.
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        # OpenSSL 3 names a mismatch NO_CERTIFICATE_ASSIGNED, earlier releases KEY_VALUES_MISMATCH.
        mismatch = error.reason in ("KEY_VALUES_MISMATCH", "NO_CERTIFICATE_ASSIGNED")
        reason = (
            "the key does not belong to the certificate" if mismatch else f"OpenSSL refused them ({error})"
        )
        raise OSError(f"--tls-cert {cert!r} and --tls-key {key!r}: {reason}") from None
    return texts[0], texts[1]


def _read_small_file(flag: str, path: str) -> bytes:
    """The bytes of the regular file ``path`` (``flag``'s value), or OSError in one line naming both:
    a device such as /dev/zero, or a pipe, would be read without end."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{flag} {path!r} is not a regular file")
        if info.st_size > MAX_TLS_FILE_BYTES:
            raise OSError(f"{flag} {path!r} is larger than {MAX_TLS_FILE_BYTES} bytes, so not a PEM file")
        return Path(path).read_bytes()
    except OSError as error:
        if error.errno is None:  # one of the above
            raise
        raise OSError(f"{flag} {path!r}: {error.strerror or error}") from None


def run(
    config: ServerConfig,
    announce: Callable[[str], None] = print,
    *,
    imports: Sequence[str] = (),
    log_level: int | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully (``mrlm-envs serve``).

    ``announce`` receives one line once the server listens, naming its address. With
    ``config.processes`` above 1 the servers run in that many child processes, which import
    ``imports`` first (the modules that register more envs) and log at ``log_level`` (this process's
    root level when None).
    """
    if config.tls_cert is not None and config.tls_key is not None:
        read_tls_pair(config.tls_cert, config.tls_key)  # a bad file is named before any process starts
    if config.processes > 1:
        from mrlm.envs.server.processes import run_processes

        run_processes(config, announce, imports=imports, log_level=log_level)
        return
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server = serve(config)
        announce(
            f"mrlm-envs: serving {len(server.servicer.catalog.ids)} envs on {server.address} "
            f"({security_note(config)})"
        )
        try:
            stop.wait()
        finally:
            server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def security_note(config: ServerConfig) -> str:
    """How clients must connect, for the line announcing the server."""
    return ("TLS" if config.tls_cert else "plaintext") + (", token required" if config.token else "")


def bracketed(host: str) -> str:
    """IPv6 literals go in brackets in an address."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
