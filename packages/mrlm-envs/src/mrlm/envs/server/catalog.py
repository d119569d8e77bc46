"""Which envs a server hosts, what clients may pass them, and building an instance for a session."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import grpc

from mrlm.envs.registry import EnvArgumentError, EnvEntry, EnvKind, env_entry, list_envs, make
from mrlm.envs.remote.convert import KIND_FROM_PROTO, KIND_TO_PROTO
from mrlm.envs.server.allowed import Allowances, ArgumentRefused
from mrlm.envs.server.client_args import DEFAULT_CLIENT_ARGS
from mrlm.envs.server.drivers import Driver, make_driver
from mrlm.envs.server.errors import RequestError
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["Catalog"]


class Catalog:
    """The env ids a server hosts: the given ones, or every id registered when it starts.

    Args:
        env_ids: ids to host; all registered ids when empty or None.
        max_action_chars: the action size limit handed to every driver.
        allowances: the directories and hosts clients may name (none by default).

    Raises:
        UnknownEnvError: one of ``env_ids`` is not registered.
    """

    def __init__(
        self,
        env_ids: Iterable[str] | None,
        *,
        max_action_chars: int,
        allowances: Allowances | None = None,
    ) -> None:
        wanted = list(env_ids or [])
        entries = [env_entry(env_id) for env_id in wanted] if wanted else list_envs()
        self._entries: dict[str, EnvEntry] = {
            entry.id: entry for entry in sorted(entries, key=lambda e: e.id)
        }
        self.max_action_chars = max_action_chars
        self.allowances = allowances if allowances is not None else Allowances()
        self._defaults: dict[tuple[str, EnvKind], dict[str, Any]] = {}
        self._defaults_lock = threading.Lock()

    @property
    def ids(self) -> list[str]:
        """The hosted ids, sorted."""
        return list(self._entries)

    def entry(self, env_id: str) -> EnvEntry:
        """The entry of a hosted id; NOT_FOUND naming the hosted ids otherwise."""
        entry = self._entries.get(env_id)
        if entry is None:
            raise RequestError(
                grpc.StatusCode.NOT_FOUND,
                f"unknown env id {env_id!r}; this server hosts: {', '.join(self._entries) or '(none)'}",
            )
        return entry

    def resolve_kind(self, env_id: str, kind: int) -> EnvKind:
        """The kind to open ``env_id`` as: ``kind``, or the env's native kind when unspecified."""
        entry = self.entry(env_id)
        if kind == pb.ENV_KIND_UNSPECIFIED:
            return entry.kinds[0]
        chosen = KIND_FROM_PROTO.get(kind)
        if chosen is None or chosen not in entry.kinds:
            offered = ", ".join(entry.kinds)
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{env_id!r} is offered as {offered}, not as {chosen or f'kind {kind}'}",
            )
        return chosen

    def client_kwargs(self, env_id: str, kind: EnvKind, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments a client sent, checked against what the env lets clients set.

        Returns them as the env should receive them (paths resolved). INVALID_ARGUMENT naming the
        first argument refused, and what is allowed, otherwise. Nothing is read from disk for a
        path outside the directories the operator allows.
        """
        entry = self.entry(env_id)
        declared = entry.client_args if entry.client_args is not None else DEFAULT_CLIENT_ARGS
        try:
            return declared.check(kwargs, defaults=self._defaults_of(entry, kind), allowances=self.allowances)
        except ArgumentRefused as error:
            raise RequestError(grpc.StatusCode.INVALID_ARGUMENT, f"{env_id!r}: {error}") from None

    def build(self, env_id: str, kind: EnvKind, kwargs: Mapping[str, Any]) -> Driver:
        """Build an instance of ``env_id`` with ``kwargs``.

        Bad keyword arguments (unknown names, values the env refuses with TypeError or ValueError) are
        INVALID_ARGUMENT; any other failure is INTERNAL.
        """
        self.entry(env_id)
        try:
            env = make(env_id, kind=kind, **kwargs)
        except EnvArgumentError as error:
            raise RequestError(grpc.StatusCode.INVALID_ARGUMENT, str(error)) from None
        except (TypeError, ValueError) as error:
            raise RequestError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{env_id!r} refused its keyword arguments: {type(error).__name__}: {error}",
            ) from None
        except Exception as error:
            raise RequestError(
                grpc.StatusCode.INTERNAL, f"building {env_id!r} failed: {type(error).__name__}: {error}"
            ) from error
        return make_driver(kind, env, max_action_chars=self.max_action_chars)

    def _defaults_of(self, entry: EnvEntry, kind: EnvKind) -> dict[str, Any]:
        """The defaults of the env's constructor, by argument name (the ceilings of limits)."""
        key = (entry.id, kind)
        with self._defaults_lock:
            known = self._defaults.get(key)
        if known is not None:
            return known
        try:
            factory = entry.factory(kind)
        except Exception as error:
            raise RequestError(
                grpc.StatusCode.INTERNAL, f"loading {entry.id!r} failed: {type(error).__name__}: {error}"
            ) from error
        try:
            parameters = list(inspect.signature(factory).parameters.values())
        except (TypeError, ValueError):  # no signature: no defaults, so no limit can be set
            parameters = []
        defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
        with self._defaults_lock:
            self._defaults[key] = defaults
        return defaults

    def env_info(self, env_id: str, default_spec: pb.EnvSpec | None) -> pb.EnvInfo:
        """The ``ListEnvs`` entry of ``env_id``."""
        entry = self.entry(env_id)
        info = pb.EnvInfo(
            env_id=env_id, kinds=[KIND_TO_PROTO[kind] for kind in entry.kinds], description=entry.description
        )
        if default_spec is not None:
            info.default_spec.CopyFrom(default_spec)
        return info
