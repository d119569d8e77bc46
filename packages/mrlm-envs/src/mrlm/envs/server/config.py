"""The settings of an env server; each field's docstring is its ``mrlm-envs serve --help`` text."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

__all__ = ["TLS_CERT_ENV", "TLS_KEY_ENV", "TOKEN_ENV", "ServerConfig"]

TOKEN_ENV = "MRLM_ENVS_TOKEN"
TLS_CERT_ENV = "MRLM_ENVS_TLS_CERT"
TLS_KEY_ENV = "MRLM_ENVS_TLS_KEY"


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
    """Threads serving rpcs (each open StepStream holds one)."""
    token: str | None = None
    """Shared token every call must carry (authorization: Bearer <token>); MRLM_ENVS_TOKEN when unset."""
    tls_cert: str | None = None
    """PEM certificate chain file for TLS (with --tls-key); MRLM_ENVS_TLS_CERT when unset."""
    tls_key: str | None = None
    """PEM private key file for TLS (with --tls-cert); MRLM_ENVS_TLS_KEY when unset."""
    grace_s: float = 10.0
    """On SIGTERM/SIGINT: seconds calls in flight get to finish before the server stops."""

    def __post_init__(self) -> None:
        # Accept "--envs a,b c" as well as a list: split every entry on commas.
        split = tuple(part.strip() for entry in self.envs for part in entry.split(",") if part.strip())
        object.__setattr__(self, "envs", split)
        for name in ("max_sessions", "workers", "handler_threads", "max_message_bytes", "max_action_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
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
    def call_timeout(self) -> float | None:
        """The per-call deadline, None when disabled."""
        return self.call_timeout_s if self.call_timeout_s > 0 else None
