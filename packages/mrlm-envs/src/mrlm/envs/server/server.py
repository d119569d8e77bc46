"""Starting and stopping an env server: gRPC, health, reflection, the idle reaper, signals.

``serve(config)`` returns a running :class:`EnvServer` (port 0 binds a free port, for tests);
``run(config)`` is what ``mrlm-envs serve`` calls: it serves until SIGTERM or SIGINT, then shuts down
gracefully.

Shutdown order: the health service turns NOT_SERVING, the server stops taking calls and gives those
in flight ``grace_s`` seconds, then every session's env is closed and the worker threads exit.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from mrlm.envs.server.auth import TokenInterceptor
from mrlm.envs.server.catalog import Catalog
from mrlm.envs.server.config import ServerConfig
from mrlm.envs.server.runner import Runner
from mrlm.envs.server.servicer import EnvServicer
from mrlm.envs.server.sessions import SessionStore
from mrlm.proto.v1 import env_pb2, env_pb2_grpc

__all__ = ["SERVICE_NAME", "EnvServer", "run", "serve"]

_log = logging.getLogger(__name__)

#: Full name of the service, as health checks and reflection know it.
SERVICE_NAME: str = env_pb2.DESCRIPTOR.services_by_name["EnvService"].full_name


class EnvServer:
    """A running env server. Build it with :func:`serve`.

    Attributes:
        config: its settings.
        port: the port it listens on (the actual one when the config asked for 0).
        address: ``host:port`` to give clients.
        store: its open sessions.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.store = SessionStore(config.max_sessions)
        self._runner = Runner(config.workers)
        catalog = Catalog(config.envs, max_action_chars=config.max_action_chars)
        self.servicer = EnvServicer(catalog, self.store, self._runner, config.call_timeout)
        self._health = health.HealthServicer()
        interceptors = [TokenInterceptor(config.token)] if config.token else []
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=config.handler_threads, thread_name_prefix="mrlm-rpc"),
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", -1),
                # Refuse to share the port with another process: a second server on the same port
                # would silently receive half the calls.
                ("grpc.so_reuseport", 0),
            ],
        )
        env_pb2_grpc.add_EnvServiceServicer_to_server(self.servicer, self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        try:
            self.port = self._bind(config)
        except BaseException:
            self._runner.shutdown()
            raise
        self.address = f"{_bracketed(config.host)}:{self.port}"
        self._stop_reaper = threading.Event()
        self._reaper: threading.Thread | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    def start(self) -> EnvServer:
        """Start serving (and the idle reaper)."""
        self._server.start()
        for service in ("", SERVICE_NAME):
            self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        if self.config.idle_timeout_s > 0:
            self._reaper = threading.Thread(target=self._reap, name="mrlm-reaper", daemon=True)
            self._reaper.start()
        _log.info("serving %d envs on %s", len(self.servicer.catalog.ids), self.address)
        return self

    def stop(self, grace_s: float | None = None) -> None:
        """Stop gracefully: calls in flight get ``grace_s`` seconds (the config's when None), then every
        session's env is closed. Idempotent; returns when done."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            grace = self.config.grace_s if grace_s is None else grace_s
            self._health.enter_graceful_shutdown()
            self._server.stop(grace).wait()
            self._stop_reaper.set()
            if self._reaper is not None:  # let it finish closing what it took, before the workers go
                self._reaper.join(timeout=grace + (self.config.call_timeout or 0.0) + 1.0)
            sessions = self.store.take_all()
            self.servicer.close_sessions(sessions)
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
        where = f"{_bracketed(config.host)}:{config.port}"
        if config.tls_cert is not None and config.tls_key is not None:
            pair = (Path(config.tls_key).read_bytes(), Path(config.tls_cert).read_bytes())
            port = self._server.add_secure_port(where, grpc.ssl_server_credentials([pair]))
        else:
            port = self._server.add_insecure_port(where)
        if not port:
            raise OSError(f"cannot listen on {where}")
        return int(port)

    def _reap(self) -> None:
        interval = min(max(self.config.idle_timeout_s / 4, 0.05), 10.0)
        while not self._stop_reaper.wait(interval):
            self.servicer.close_sessions(self.store.take_idle(self.config.idle_timeout_s))


def serve(config: ServerConfig | None = None, **fields: Any) -> EnvServer:
    """Start a server and return it running; ``fields`` override the config's (``port=0``...).

    Example:
        >>> server = serve(envs=("mrlm/Math-v0",), port=0)
        >>> server.port > 0
        True
        >>> server.stop()
    """
    config = ServerConfig(**fields) if config is None else dataclasses.replace(config, **fields)
    return EnvServer(config).start()


def run(config: ServerConfig, announce: Callable[[str], None] = print) -> None:
    """Serve until SIGTERM or SIGINT, then shut down gracefully (``mrlm-envs serve``).

    ``announce`` receives one line once the server listens, naming its address.
    """
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server = serve(config)
        security = ("TLS" if config.tls_cert else "plaintext") + (", token required" if config.token else "")
        announce(
            f"mrlm-envs: serving {len(server.servicer.catalog.ids)} envs on {server.address} ({security})"
        )
        try:
            stop.wait()
        finally:
            server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _bracketed(host: str) -> str:
    """IPv6 literals go in brackets in an address."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
