"""Where MRLM env ids live, and one ``make`` for every kind of env.

Single-agent ids are registered with ``gymnasium.register`` and multi-agent ids with PettingZoo's
registry (``pettingzoo.register("aec" | "parallel", ...)``), so ``gymnasium.make("mrlm/Math-v0")`` and
``pettingzoo.make("parallel", "mrlm/Debate-v0")`` work once ``mrlm.envs`` is imported. This module keeps
one entry per id as well (kinds, a one-line description, entry points), which gives :func:`make` a single
door for both kinds and lets it check keyword arguments before building anything.

Ids with a scheme, ``scheme://...``, go through the same two doors to whoever registered the scheme
with :func:`register_scheme`: ids of envs on a server, ``grpc://host:port/namespace/Name-vN``
(``grpcs://`` for TLS), are made and looked up by ``mrlm.envs.remote``, which registers both schemes
when it is imported, so configs switch between local and remote envs by changing the id string. This
module imports nothing of the schemes' providers: :func:`provide_scheme` names the module to import the
first time an id of a scheme is used (``mrlm.envs`` names ``mrlm.envs.remote`` for ``grpc`` and
``grpcs``, which need gRPC).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import gymnasium
import pettingzoo

if TYPE_CHECKING:
    from mrlm.envs.server.client_args import ClientArgs

EnvKind = Literal["gymnasium", "aec", "parallel"]
ENV_KINDS: tuple[EnvKind, ...] = get_args(EnvKind)


class UnknownEnvError(KeyError):
    """An env id that is not registered. The message names the known ids."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class EnvArgumentError(TypeError):
    """A keyword argument the env does not take, or a kind the env does not offer."""


@dataclass(frozen=True)
class EnvEntry:
    """One registered env id.

    Attributes:
        id: the id, ``namespace/Name-vN``.
        kinds: the APIs it is offered in; the first is the default of :func:`make`.
        description: one line for listings.
        entry_points: ``"module:attr"`` (or a callable) per kind, building the env from keyword arguments.
        client_args: what clients of an env server may set (None: the server's conservative default);
            local callers are not bound by it. See :mod:`mrlm.envs.server.client_args`.
    """

    id: str
    kinds: tuple[EnvKind, ...]
    description: str
    entry_points: Mapping[EnvKind, str | Callable[..., Any]]
    client_args: ClientArgs | None = None

    @property
    def multi_agent(self) -> bool:
        return self.kinds[0] != "gymnasium"

    def factory(self, kind: EnvKind) -> Callable[..., Any]:
        """The callable that builds the env as ``kind`` (its entry point, imported on first use)."""
        return _load(self.entry_points[kind])


@dataclass(frozen=True)
class Scheme:
    """What :func:`make` and :func:`env_entry` do with the ids of one scheme (``name://...``).

    Attributes:
        make: ``make(id, kind=kind, **kwargs)``, the env of ``id``.
        entry: ``entry(id)``, the :class:`EnvEntry` of ``id``.
    """

    make: Callable[..., Any]
    entry: Callable[[str], EnvEntry]


_ENTRIES: dict[str, EnvEntry] = {}
_SCHEMES: dict[str, Scheme] = {}
#: Scheme -> the module whose import registers it.
_SCHEME_PROVIDERS: dict[str, str] = {}


def register_env(
    id: str,
    *,
    description: str,
    gymnasium_entry_point: str | Callable[..., Any] | None = None,
    aec_entry_point: str | Callable[..., Any] | None = None,
    parallel_entry_point: str | Callable[..., Any] | None = None,
    default_kind: EnvKind | None = None,
    client_args: ClientArgs | None = None,
    passive_checker: bool = True,
) -> EnvEntry:
    """Register ``id`` in Gymnasium's or PettingZoo's registry, and in ours.

    A single-agent env gives ``gymnasium_entry_point``; a multi-agent env gives ``aec_entry_point``
    and/or ``parallel_entry_point`` (``default_kind`` picks which :func:`make` builds by default; the
    first one given otherwise). Entry points are ``"module:attr"`` strings, imported on first use.
    ``client_args`` declares which keyword arguments a client of an env server may set, and within
    which bounds (``mrlm.envs.server.client_args.ClientArgs``); without it a server lets clients set
    only ``render_mode`` and small scalars. ``passive_checker=False`` registers a single-agent env
    without Gymnasium's passive env checker (``gymnasium.make(..., disable_env_checker=False)``
    still adds it): for envs checked with ``gymnasium.utils.env_checker.check_env`` elsewhere.
    """
    given: dict[EnvKind, str | Callable[..., Any]] = {}
    if gymnasium_entry_point is not None:
        given["gymnasium"] = gymnasium_entry_point
    if aec_entry_point is not None:
        given["aec"] = aec_entry_point
    if parallel_entry_point is not None:
        given["parallel"] = parallel_entry_point
    if not given:
        raise ValueError(f"register_env({id!r}) needs at least one entry point")
    if "gymnasium" in given and len(given) > 1:
        raise ValueError(f"{id!r}: an env is either single-agent (gymnasium) or multi-agent (aec/parallel)")
    kinds = tuple(given)
    if default_kind is not None:
        if default_kind not in given:
            raise ValueError(f"{id!r}: default_kind {default_kind!r} has no entry point")
        kinds = (default_kind, *(k for k in kinds if k != default_kind))

    if "gymnasium" in given:
        gymnasium.register(id=id, entry_point=given["gymnasium"], disable_env_checker=not passive_checker)
    for kind in ("aec", "parallel"):
        if kind in given:
            pettingzoo.register(cast(Any, kind), id, given[cast(EnvKind, kind)])

    entry = EnvEntry(id=id, kinds=kinds, description=description, entry_points=given, client_args=client_args)
    _ENTRIES[id] = entry
    return entry


def register_scheme(name: str, *, make: Callable[..., Any], entry: Callable[[str], EnvEntry]) -> None:
    """Send ids ``name://...`` to ``make`` and ``entry`` (see :class:`Scheme`); a later call replaces them."""
    _SCHEMES[_check_scheme(name)] = Scheme(make=make, entry=entry)


def provide_scheme(name: str, module: str) -> None:
    """Import ``module`` the first time an id ``name://...`` is used; its import must register ``name``."""
    _SCHEME_PROVIDERS[_check_scheme(name)] = module


def _check_scheme(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"a scheme is a name such as 'grpc', got {name!r}")
    return name


def _scheme(id: str) -> Scheme | None:
    """The scheme handling ``id``; None for a plain id, or a scheme nobody registered."""
    name, separator, _ = id.partition("://")
    if not separator:
        return None
    if name not in _SCHEMES and name in _SCHEME_PROVIDERS:
        importlib.import_module(_SCHEME_PROVIDERS[name])
    return _SCHEMES.get(name)


def list_envs() -> list[EnvEntry]:
    """Every MRLM env id registered in this process, sorted by id."""
    return [_ENTRIES[key] for key in sorted(_ENTRIES)]


def env_entry(id: str) -> EnvEntry:
    """The entry of ``id``; :class:`UnknownEnvError` naming the known ids when there is none.

    An id with a registered scheme is looked up by it: a remote id (``grpc://host:port/...``) on its
    server.
    """
    scheme = _scheme(id)
    if scheme is not None:
        return scheme.entry(id)
    try:
        return _ENTRIES[id]
    except KeyError:
        name, separator, rest = id.partition("://")
        if separator:
            schemes = sorted(set(_SCHEMES) | set(_SCHEME_PROVIDERS))
            lower = name.lower()
            hint = f" Did you mean '{lower}://{rest}'?" if lower != name and lower in schemes else ""
            raise UnknownEnvError(
                f"unknown scheme {name!r} in env id {id!r}.{hint} Known schemes: {', '.join(schemes) or '(none)'}"
            ) from None
        known = sorted(_ENTRIES)
        close = difflib.get_close_matches(id, known, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownEnvError(
            f"unknown env id {id!r}.{hint} Known ids: {', '.join(known) or '(none)'}"
        ) from None


def make(id: str, *, kind: EnvKind | None = None, **kwargs: Any) -> Any:
    """Build the env registered as ``id``.

    Args:
        id: a registered id such as ``"mrlm/Math-v0"``, or a remote id such as
            ``"grpc://127.0.0.1:50051/mrlm/Math-v0"``.
        kind: ``"gymnasium"``, ``"aec"`` or ``"parallel"``; the env's first kind when None.
        **kwargs: the env's own keyword arguments, checked against its signature first (by the server,
            for a remote id).

    Returns:
        A ``gymnasium.Env`` (made with ``gymnasium.make``, wrappers included), or a PettingZoo
        ``AECEnv``/``ParallelEnv`` (made with ``pettingzoo.make``); for a remote id, the client of the
        env's kind (``mrlm.envs.remote.RemoteEnv``, ``RemoteAECEnv`` or ``RemoteParallelEnv``).

    Raises:
        UnknownEnvError: ``id`` is not registered (the message lists the known ids).
        EnvArgumentError: the env does not offer ``kind`` or does not take one of ``kwargs``.
        mrlm.envs.remote.RemoteEnvError: a remote id whose server cannot be reached or refuses.
    """
    scheme = _scheme(id)
    if scheme is not None:
        return scheme.make(id, kind=kind, **kwargs)
    entry = env_entry(id)
    chosen = entry.kinds[0] if kind is None else kind
    if chosen not in entry.kinds:
        raise EnvArgumentError(
            f"{id!r} is offered as {', '.join(entry.kinds)}, not {chosen!r}"
            if chosen in ENV_KINDS
            else f"unknown kind {chosen!r}; kinds are {', '.join(ENV_KINDS)}"
        )
    check_kwargs(id, entry.factory(chosen), kwargs)
    if chosen == "gymnasium":
        return gymnasium.make(id, **kwargs)
    return pettingzoo.make(cast(Any, chosen), id, **kwargs)


def check_kwargs(id: str, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Raise :class:`EnvArgumentError` naming any keyword ``factory`` does not accept."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: let the call itself decide
        return
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    for name in kwargs:
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise EnvArgumentError(
                f"{id!r} has no keyword argument {name!r}{hint}; it accepts: {', '.join(accepted) or 'none'}"
            )


def _load(entry_point: str | Callable[..., Any]) -> Callable[..., Any]:
    if callable(entry_point):
        return entry_point
    module_name, _, attr = entry_point.partition(":")
    return cast(Callable[..., Any], getattr(importlib.import_module(module_name), attr))
