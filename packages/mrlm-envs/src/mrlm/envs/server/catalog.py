"""Which envs a server hosts, and building an instance of one for a new session."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import grpc

from mrlm.envs.registry import EnvArgumentError, EnvEntry, EnvKind, env_entry, list_envs, make
from mrlm.envs.remote.convert import KIND_FROM_PROTO, KIND_TO_PROTO
from mrlm.envs.server.drivers import Driver, make_driver
from mrlm.envs.server.errors import RequestError
from mrlm.proto.v1 import env_pb2 as pb

__all__ = ["Catalog"]


class Catalog:
    """The env ids a server hosts: the given ones, or every id registered when it starts.

    Args:
        env_ids: ids to host; all registered ids when empty or None.
        max_action_chars: the action size limit handed to every driver.

    Raises:
        UnknownEnvError: one of ``env_ids`` is not registered.
    """

    def __init__(self, env_ids: Iterable[str] | None, *, max_action_chars: int) -> None:
        wanted = list(env_ids or [])
        entries = [env_entry(env_id) for env_id in wanted] if wanted else list_envs()
        self._entries: dict[str, EnvEntry] = {
            entry.id: entry for entry in sorted(entries, key=lambda e: e.id)
        }
        self.max_action_chars = max_action_chars

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

    def env_info(self, env_id: str, default_spec: pb.EnvSpec | None) -> pb.EnvInfo:
        """The ``ListEnvs`` entry of ``env_id``."""
        entry = self.entry(env_id)
        info = pb.EnvInfo(
            env_id=env_id, kinds=[KIND_TO_PROTO[kind] for kind in entry.kinds], description=entry.description
        )
        if default_spec is not None:
            info.default_spec.CopyFrom(default_spec)
        return info
