"""What a client of an env server may pass an env: per-env declarations of keyword arguments.

Locally (``mrlm.envs.make``, ``gymnasium.make``, ``pettingzoo.make``) an env takes anything its
constructor accepts. Over the wire it does not: before a session's env is built, the server checks the
client's keyword arguments against the env's :class:`ClientArgs` (``register_env(...,
client_args=...)``) and refuses anything else with INVALID_ARGUMENT naming the argument and what is
allowed. A declaration maps argument names to kinds:

- :class:`Int`, :class:`Float`, :class:`Bool`, :class:`Choice`, :class:`Str`: JSON scalars, bounded;
- :class:`ListOf`, :class:`MapOf`: JSON arrays and objects of bounded size whose items are kinds too;
- :class:`Limit`: a resource limit (time, memory, output) a client may only lower: a number between
  ``low`` and the env's own default, read from its constructor's signature;
- :class:`Records`: inline records (a JSON array of at most ``max_items`` objects), or the path of a
  file under a directory the operator allows (``--allow-records-dir``);
- :class:`Url`: an http(s) URL of a host the operator allows (``--allow-url-host``).

Arguments a declaration does not name are refused; so are, by leaving them out, arguments that take
objects (judges, reward functions, sandboxes, search backends): they stay the operator's choice.
Envs registered without a declaration get :data:`DEFAULT_CLIENT_ARGS`: ``render_mode`` and small
scalars, no paths. The size of the whole request is capped apart (``--max-kwargs-bytes``).

This module imports nothing of gRPC, so that env registrations can use it cheaply.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mrlm.envs.server.allowed import Allowances, ArgumentRefused

__all__ = [
    "DEFAULT_CLIENT_ARGS",
    "RENDER_MODE",
    "Allowances",
    "Arg",
    "ArgumentRefused",
    "Bool",
    "Choice",
    "ClientArgs",
    "Float",
    "Int",
    "Limit",
    "ListOf",
    "MapOf",
    "Records",
    "Scalar",
    "Str",
    "Url",
]


@dataclass(frozen=True)
class Where:
    """What a check may need beyond the value: the operator's allowances, the env's default."""

    allowances: Allowances
    default: Any = None


@dataclass(frozen=True, kw_only=True)
class Arg:
    """A kind of client-settable value. ``optional`` lets JSON ``null`` (None) through as well."""

    optional: bool = False

    def check(self, value: Any, where: Where) -> Any:
        """``value`` as the env should receive it; :class:`ArgumentRefused` saying what is allowed."""
        if value is None and self.optional:
            return None
        return self._check(value, where)

    def describe(self, where: Where) -> str:
        """What this kind accepts, for messages ("an int in [1, 16]")."""
        text = self._describe(where)
        return f"null or {text}" if self.optional else text

    def _check(self, value: Any, where: Where) -> Any:
        raise NotImplementedError

    def _describe(self, where: Where) -> str:
        raise NotImplementedError

    def _refuse(self, value: Any, where: Where) -> ArgumentRefused:
        return ArgumentRefused(f"must be {self.describe(where)}, got {_preview(value)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    # An int is finite, whatever its size (math.isfinite would raise on one past float's range).
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


@dataclass(frozen=True)
class Int(Arg):
    """An integer in ``[low, high]``."""

    low: int
    high: int

    def _check(self, value: Any, where: Where) -> Any:
        if not (_is_int(value) and self.low <= value <= self.high):
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        return f"an int in [{self.low}, {self.high}]"


@dataclass(frozen=True)
class Float(Arg):
    """A finite number (int or float) in ``[low, high]``."""

    low: float
    high: float

    def _check(self, value: Any, where: Where) -> Any:
        if not (_is_number(value) and self.low <= value <= self.high):
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        return f"a number in [{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class Bool(Arg):
    """``true`` or ``false``."""

    def _check(self, value: Any, where: Where) -> Any:
        if not isinstance(value, bool):
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        return "a bool"


@dataclass(frozen=True)
class Choice(Arg):
    """One of ``values`` (compared with their types: ``1`` is not ``true``)."""

    values: tuple[Any, ...]

    def _check(self, value: Any, where: Where) -> Any:
        if not any(type(value) is type(allowed) and value == allowed for allowed in self.values):
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        return "one of " + ", ".join(_json_repr(value) for value in self.values)


@dataclass(frozen=True)
class Str(Arg):
    """A string of at most ``max_chars`` characters, matching ``pattern`` (a full match) when given."""

    max_chars: int
    pattern: str | None = None

    def _check(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str) or len(value) > self.max_chars or "\x00" in value:
            raise self._refuse(value, where)
        if self.pattern is not None and re.fullmatch(self.pattern, value) is None:
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        shape = f" matching {self.pattern}" if self.pattern else ""
        return f"a string of at most {self.max_chars} characters{shape}"


@dataclass(frozen=True)
class ListOf(Arg):
    """A JSON array of ``min_items`` to ``max_items`` items of kind ``item``; with ``single``, one
    bare item is accepted too (for arguments such as ``topics="algebra"``)."""

    item: Arg
    max_items: int
    min_items: int = 0
    single: bool = False

    def _check(self, value: Any, where: Where) -> Any:
        if self.single and not isinstance(value, list):
            return self.item.check(value, Where(where.allowances))
        if not isinstance(value, list) or not self.min_items <= len(value) <= self.max_items:
            raise self._refuse(value, where)
        checked = []
        for index, item in enumerate(value):
            try:
                checked.append(self.item.check(item, Where(where.allowances)))
            except ArgumentRefused as error:
                raise ArgumentRefused(f"item {index} {error}") from None
        return checked

    def _describe(self, where: Where) -> str:
        single = f"{self.item.describe(where)}, or " if self.single else ""
        return (
            f"{single}a list of {self.min_items} to {self.max_items} items, each {self.item.describe(where)}"
        )


@dataclass(frozen=True)
class MapOf(Arg):
    """A JSON object of at most ``max_items`` entries: keys of at most ``key_chars`` characters,
    values of kind ``value``."""

    value: Arg
    max_items: int
    key_chars: int = 64

    def _check(self, value: Any, where: Where) -> Any:
        if not isinstance(value, dict) or len(value) > self.max_items:
            raise self._refuse(value, where)
        checked = {}
        for key, item in value.items():
            if len(key) > self.key_chars:
                raise ArgumentRefused(f"has a key longer than {self.key_chars} characters")
            try:
                checked[key] = self.value.check(item, Where(where.allowances))
            except ArgumentRefused as error:
                raise ArgumentRefused(f"entry {_preview(key)} {error}") from None
        return checked

    def _describe(self, where: Where) -> str:
        return f"an object of at most {self.max_items} entries, each {self.value.describe(where)}"


@dataclass(frozen=True)
class Limit(Arg):
    """A resource limit a client may only lower: a number from ``low`` up to the env's own default
    (an int when that default is an int)."""

    low: float

    def _check(self, value: Any, where: Where) -> Any:
        default = where.default
        if not _is_number(default):  # a declaration that does not fit its env: refuse, never guess
            raise ArgumentRefused("cannot be set by a client (the env has no numeric default for it)")
        fits_type = _is_int(value) if _is_int(default) else _is_number(value)
        if not (fits_type and self.low <= value <= default):
            raise self._refuse(value, where)
        return value

    def _describe(self, where: Where) -> str:
        number = "an int" if _is_int(where.default) else "a number"
        return f"{number} in [{self.low:g}, {where.default}] (a limit clients may lower, never raise)"


@dataclass(frozen=True)
class Records(Arg):
    """Records given inline (a JSON array of at most ``max_items`` objects) or, when the operator
    allows a directory (``--allow-records-dir``), the path of a file in it."""

    max_items: int

    def _check(self, value: Any, where: Where) -> Any:
        if isinstance(value, str):
            return where.allowances.file(value)
        if not isinstance(value, list) or len(value) > self.max_items:
            raise self._refuse(value, where)
        for index, record in enumerate(value):
            if not isinstance(record, dict):
                raise ArgumentRefused(
                    f"item {index} must be a JSON object (one record), got {_preview(record)}"
                )
        return value

    def _describe(self, where: Where) -> str:
        inline = f"a list of at most {self.max_items} records (JSON objects)"
        if where.allowances.records_dirs:
            return f"{inline}, or the path of a file under {', '.join(where.allowances.records_dirs)}"
        return f"{inline}; this server accepts no file paths from clients"


@dataclass(frozen=True)
class Url(Arg):
    """An http(s) URL whose host the operator allows (``--allow-url-host``)."""

    max_chars: int = 2048

    def _check(self, value: Any, where: Where) -> Any:
        if not isinstance(value, str) or len(value) > self.max_chars:
            raise self._refuse(value, where)
        return where.allowances.url(value)

    def _describe(self, where: Where) -> str:
        hosts = ", ".join(sorted(where.allowances.url_hosts)) or "none"
        return f"an http(s) URL of an allowed host ({hosts})"


#: Strings a scalar may be: short, and free of what paths and URLs need (``/``, ``.``, ``:``, ``~``).
_PLAIN = r"[A-Za-z0-9_\-]*"


@dataclass(frozen=True)
class Scalar(Arg):
    """Any small JSON scalar: null, a bool, an int or a float of bounded size, a short plain string
    (letters, digits, ``_`` and ``-``: nothing that can spell a path or a URL)."""

    max_abs: float = 10_000
    max_chars: int = 64

    def _check(self, value: Any, where: Where) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if _is_number(value) and abs(value) <= self.max_abs:
            return value
        if isinstance(value, str) and len(value) <= self.max_chars and re.fullmatch(_PLAIN, value):
            return value
        raise self._refuse(value, where)

    def _describe(self, where: Where) -> str:
        return (
            f"null, a bool, a number in [-{self.max_abs:g}, {self.max_abs:g}] or a string of at most "
            f"{self.max_chars} letters, digits, '_' and '-'"
        )


@dataclass(frozen=True)
class ClientArgs:
    """The keyword arguments clients may give an env over the wire.

    Attributes:
        args: argument name -> kind.
        others: the kind of arguments ``args`` does not name; None refuses them.
    """

    args: Mapping[str, Arg] = field(default_factory=dict)
    others: Arg | None = None

    def check(
        self, kwargs: Mapping[str, Any], *, defaults: Mapping[str, Any], allowances: Allowances
    ) -> dict[str, Any]:
        """The keyword arguments to build the env with (paths resolved), if every one is allowed.

        Args:
            kwargs: what the client sent.
            defaults: the env constructor's defaults, by argument name (for :class:`Limit`).
            allowances: the directories and hosts the operator allows.

        Raises:
            ArgumentRefused: naming the first argument refused and what is allowed.
        """
        checked: dict[str, Any] = {}
        for name, value in kwargs.items():
            kind = self.args.get(name, self.others)
            if kind is None:
                raise ArgumentRefused(self._undeclared(name))
            where = Where(allowances, defaults.get(name))
            try:
                checked[name] = kind.check(value, where)
            except ArgumentRefused as error:
                raise ArgumentRefused(f"argument {name!r} {error}") from None
        return checked

    def _undeclared(self, name: str) -> str:
        settable = sorted(self.args)
        close = difflib.get_close_matches(name, settable, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return (
            f"argument {name!r} cannot be set by a client{hint}; "
            f"clients may set: {', '.join(settable) or 'nothing'}"
        )


#: Render modes a server can honour for a client: text comes back over the wire, nothing else does.
RENDER_MODE = Choice((None, "ansi"))

#: The declaration of envs registered without one: ``render_mode`` and small scalars, no paths.
DEFAULT_CLIENT_ARGS = ClientArgs({"render_mode": RENDER_MODE}, others=Scalar())


def _preview(value: Any) -> str:
    text = _json_repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _json_repr(value: Any) -> str:
    """A value as a client wrote it (JSON spelling for null and the bools)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} entries"
    return repr(value)
