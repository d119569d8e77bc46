"""The settings of an env server; each field's docstring is its ``mrlm-envs serve --help`` text."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

__all__ = [
    "HANDLER_RESERVE",
    "PROCESSES_PER_CORE",
    "TLS_CERT_ENV",
    "TLS_KEY_ENV",
    "TOKEN_ENV",
    "ServerConfig",
    "max_processes",
]

TOKEN_ENV = "MRLM_ENVS_TOKEN"
TLS_CERT_ENV = "MRLM_ENVS_TLS_CERT"
TLS_KEY_ENV = "MRLM_ENVS_TLS_KEY"

#: Server processes allowed per CPU core this process may use: env calls are CPU-bound Python, so more
#: processes than cores gain nothing, and a typo such as ``--processes 100000`` must not start them all.
PROCESSES_PER_CORE = 4

#: Handler threads never given to streams: the health watchers' share and a reserve for unary calls
#: and health checks, so that open streams cannot starve them.
HANDLER_RESERVE = 12


@dataclass(frozen=True)
class ServerConfig:
    """How ``mrlm-envs serve`` hosts envs: which, where, with which limits and which access rules."""

    envs: tuple[str, ...] = ()
    """Env ids to host, comma- or space-separated (e.g. mrlm/Math-v0,mrlm/Debate-v0); all registered when empty."""
    host: str = "127.0.0.1"
    """Interface to listen on: loopback by default; 0.0.0.0 (or ::) to accept other machines."""
    port: int = 50051
    """TCP port; 0 picks a free one (the port is printed when the server is ready)."""
    max_sessions: int = 1024
    """Most sessions open at once; further OpenSession calls fail with RESOURCE_EXHAUSTED."""
    idle_timeout_s: float = 600.0
    """Seconds without a call after which a session is closed (a client that vanished); 0 disables."""
    call_timeout_s: float = 60.0
    """Deadline of one env call, in seconds: past it the call fails with DEADLINE_EXCEEDED and its session is closed; 0 disables."""
    max_message_bytes: int = 16 * 1024 * 1024
    """Largest request accepted, in bytes; larger ones fail with RESOURCE_EXHAUSTED."""
    max_action_chars: int = 262_144
    """Longest action accepted, in characters (text or JSON); longer ones fail with INVALID_ARGUMENT."""
    workers: int = 16
    """Threads running env calls; calls of different sessions run in parallel, those of one session in order."""
    handler_threads: int = 64
    """Threads serving rpcs; each open stream holds one, so some are always kept for unary calls and health."""
    max_streams: int = 32
    """Most streams (StepStream, reflection) open at once; further ones fail with RESOURCE_EXHAUSTED. At most --handler-threads minus 12, kept for unary calls and health."""
    disconnect_grace_s: float = 2.0
    """Seconds a session outlives the connection of the client that last used it (a client that died); 0 leaves such sessions to the idle timeout."""
    allow_records_dir: tuple[str, ...] = ()
    """Directories whose files clients may name in records/documents arguments; none by default: clients send records inline."""
    allow_url_host: tuple[str, ...] = ()
    """Hosts that URL arguments of clients may point to (for envs that declare one); none by default."""
    max_kwargs_bytes: int = 1024 * 1024
    """Largest keyword arguments (kwargs_json, inline records included) of one OpenSession, in bytes; larger ones fail with INVALID_ARGUMENT."""
    max_kwargs_bytes_total: int = 64 * 1024 * 1024
    """Most keyword-argument bytes held by the open sessions together; further OpenSession calls fail with RESOURCE_EXHAUSTED."""
    token: str | None = None
    """Shared token every call must carry (authorization: Bearer <token>); MRLM_ENVS_TOKEN when unset."""
    tls_cert: str | None = None
    """PEM certificate chain file for TLS (with --tls-key); MRLM_ENVS_TLS_CERT when unset."""
    tls_key: str | None = None
    """PEM private key file for TLS (with --tls-cert); MRLM_ENVS_TLS_KEY when unset."""
    grace_s: float = 10.0
    """On SIGTERM/SIGINT: seconds calls in flight get to finish; then sessions are closed and calls still running are given up on."""
    processes: int = 1
    """Server processes sharing the port (Linux only, SO_REUSEPORT): each client connection, and so each session, stays on one of them. At most 4 per CPU core. Every limit above holds per process."""

    def __post_init__(self) -> None:
        # Accept "--envs a,b c" as well as a list: split every entry on commas.
        split = tuple(part.strip() for entry in self.envs for part in entry.split(",") if part.strip())
        object.__setattr__(self, "envs", split)
        positive = (
            "max_sessions",
            "workers",
            "handler_threads",
            "max_streams",
            "max_message_bytes",
            "max_action_chars",
            "max_kwargs_bytes",
            "max_kwargs_bytes_total",
            "processes",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_streams > self.handler_threads - HANDLER_RESERVE:
            raise ValueError(
                f"max_streams ({self.max_streams}) must leave {HANDLER_RESERVE} of the handler_threads "
                f"({self.handler_threads}) to unary calls and health: raise --handler-threads or lower --max-streams"
            )
        for name in ("idle_timeout_s", "call_timeout_s", "disconnect_grace_s", "grace_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:  # nan passes a `< 0` check
                disables = " (0 disables it)" if name != "grace_s" else ""
                raise ValueError(
                    f"{name} must be a finite number of seconds, at least 0{disables}, got {value}"
                )
        if self.processes > max_processes():
            raise ValueError(
                f"processes must be at most {max_processes()} ({PROCESSES_PER_CORE} per CPU core this "
                f"process may use), got {self.processes}"
            )
        for host in self.allow_url_host:
            if "/" in host or " " in host.strip():
                raise ValueError(
                    f"allow_url_host takes host names (e.g. example.org), not URLs: got {host!r}"
                )
        if not 0 <= self.port < 65536:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both --tls-cert and --tls-key")
        if self.token == "":
            raise ValueError("the token must not be empty")

    def with_environment(self) -> ServerConfig:
        """This config with the token and TLS files the environment gives, where fields are unset."""
        env_cert, env_key = os.environ.get(TLS_CERT_ENV), os.environ.get(TLS_KEY_ENV)
        use_env_tls = self.tls_cert is None and self.tls_key is None and env_cert and env_key
        return dataclasses.replace(
            self,
            token=self.token if self.token is not None else (os.environ.get(TOKEN_ENV) or None),
            tls_cert=env_cert if use_env_tls else self.tls_cert,
            tls_key=env_key if use_env_tls else self.tls_key,
        )

    @property
    def disconnect_grace(self) -> float | None:
        """How long a session outlives its client's connection, None when disabled."""
        return self.disconnect_grace_s if self.disconnect_grace_s > 0 else None

    @property
    def call_timeout(self) -> float | None:
        """The per-call deadline, None when disabled."""
        return self.call_timeout_s if self.call_timeout_s > 0 else None


def max_processes() -> int:
    """The most server processes one ``mrlm-envs serve`` starts: :data:`PROCESSES_PER_CORE` per core
    this process may run on."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return PROCESSES_PER_CORE * max(1, cores)
