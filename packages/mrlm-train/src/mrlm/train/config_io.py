"""Config dataclasses from YAML files: ``--config run.yaml`` fills the same dataclasses the flags do.

Keys mirror the dataclass fields, nested dataclasses are nested mappings. Unknown keys, a key given
twice in one mapping, and values of the wrong type (a word a ``Literal`` field does not list, a number
where text is wanted) are errors that name the key's path, so a typo never passes silently.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import json
import numbers
import os
import reprlib
import stat
import types
import typing
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any, TypeVar

import yaml

T = TypeVar("T")

# Field types whose YAML values are checked and converted (a wrong one would fail much later).
_SCALARS = (bool, int, float)

#: Text fields that hold JSON, which a file may write as YAML structure instead: the value's kind.
_JSON_TEXT: dict[str, type] = {"env_kwargs": dict, "env_mixture": list}


#: Set by :func:`checks_deferred`: a file's values that a config's own check refuses are kept as they
#: are, for flags of the same command line to replace before the config is built (and checked) again.
#: The list it yields collects what was refused.
_DEFERRED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "mrlm_config_checks_deferred", default=None
)


@contextlib.contextmanager
def checks_deferred() -> typing.Iterator[list[str]]:
    """Within it, :func:`from_dict` returns an instance whose own checks (``__post_init__``) refused
    the file's values unchecked, rather than raising: the command line's flags come after the file,
    and the config tyro builds from both is checked then. Unknown keys and values of the wrong type
    still raise. The list it yields receives each refusal's message, which names the file and key
    path, for the command line to say should its config be refused too."""
    refused: list[str] = []
    token = _DEFERRED.set(refused)
    try:
        yield refused
    finally:
        _DEFERRED.reset(token)


class ConfigError(ValueError):
    """A config file that cannot fill the config dataclass; the message names the key path."""

    command: str = ""
    """The subcommand the file was given to, when the command line knows it."""


def load_config(cls: type[T], path: str | Path) -> T:
    """Read ``path`` (YAML or JSON) into an instance of the dataclass ``cls``."""
    return from_dict(cls, load_mapping(path), where=str(path))


#: The most a config file may hold. Read from a pipe (``--config <(envsubst < run.yaml)``), it is
#: read up to this and no further, so an endless stream is refused rather than filling memory.
MAX_CONFIG_BYTES = 16 << 20


def load_mapping(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of the YAML (or JSON) file ``path``; an empty file is an empty mapping.
    ``path`` may be a regular file or a pipe (process substitution).

    Raises:
        ConfigError: no such file, a directory or device, unreadable, not UTF-8, larger than
            :data:`MAX_CONFIG_BYTES`, not YAML, or a top level that is not a mapping.
    """
    file = Path(path)
    try:
        mode = file.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"config file {str(file)!r} is a directory")
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise ConfigError(f"config file {str(file)!r} is neither a regular file nor a pipe")
        with file.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(file)!r} does not exist") from None
    except OSError as error:
        raise ConfigError(f"config file {str(file)!r} cannot be read: {error.strerror or error}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {str(file)!r} is larger than {MAX_CONFIG_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{file}: not UTF-8 text (byte {error.start})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: plain data only
    except _DuplicateKeyError as error:
        raise ConfigError(f"{file}: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: not valid YAML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be a mapping of config keys")
    return data


class _DuplicateKeyError(yaml.YAMLError):
    """A key given twice in one mapping of the file."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping, which it would otherwise
    resolve by keeping the last value and silently dropping the first (say, a whole ``run:`` block)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: keys written beside it override the merged ones, by design
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: the base loader refuses it
            if first is not key_node:
                raise _DuplicateKeyError(
                    f"key {key!r} is given twice in one mapping, on lines {first.start_mark.line + 1} "
                    f"and {key_node.start_mark.line + 1}; keep one"
                )
        return super().construct_mapping(node, deep=deep)


def from_dict(cls: type[T], data: dict[str, Any], *, where: str = "config", base: T | None = None) -> T:
    """Build ``cls`` from ``data``, recursing into nested dataclass fields.

    A key the mapping leaves out keeps ``base``'s value when given, else the field's default. A nested
    mapping starts from the enclosing config's own default for that field: ``run: {seed: 3}`` in a
    MAGRPO file keeps MAGRPO's ``run.output_dir`` and ``run.max_steps``, as ``--run.seed 3`` does.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    values: dict[str, Any] = {}
    if base is not None:
        values = {name: getattr(base, name) for name in fields}
    for key, value in data.items():
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; known keys: {', '.join(fields)}")
        kind = _JSON_TEXT.get(key)
        if hints[key] is str and kind is not None and isinstance(value, kind):
            values[key] = json.dumps(value)  # env_kwargs as a mapping, env_mixture as a list
        else:
            values[key] = _convert(hints[key], value, f"{where}.{key}", _default(fields[key], base))
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        refused = _DEFERRED.get()
        if isinstance(error, ValueError) and not isinstance(error, ConfigError) and refused is not None:
            refused.append(f"{where}: {error}")
            return _unchecked(cls, values)
        raise ConfigError(f"{where}: {error}") from None


def _default(field: dataclasses.Field[Any], base: object) -> Any:
    """The value a field holds when its key is left out: ``base``'s, else the field's default."""
    if base is not None:
        return getattr(base, field.name)
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None if field.default is dataclasses.MISSING else field.default


def _unchecked(cls: type[T], values: dict[str, Any]) -> T:
    """An instance of the dataclass ``cls`` holding ``values`` (defaults for the rest), built without
    its ``__post_init__``: only as the defaults of a command line, whose result is built and checked."""
    instance = object.__new__(cls)
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        # A required field the file leaves out never comes here: cls(**values) raised TypeError.
        if field.name in values:
            value = values[field.name]
        elif field.default is not dataclasses.MISSING:
            value = field.default
        else:
            value = field.default_factory()  # type: ignore[operator]
        object.__setattr__(instance, field.name, value)  # frozen dataclasses too
    return instance


def _convert(hint: Any, value: Any, where: str, default: Any = None) -> Any:
    """``value`` as a field typed ``hint`` takes it, or a ConfigError naming ``where`` and the value.

    Nested dataclasses take mappings; ``Literal`` fields one of their values, of its type too (YAML's
    bare ``no`` is false, not the word); text and path fields text; numbers and booleans go through
    :func:`_scalar`; ``tuple[X, ...]`` a list and ``dict[K, V]`` a mapping, item by item. ``None`` is
    taken where the hint allows it. Other hints take the value as it is. A nested dataclass starts
    from ``default`` (the field's value when the key is left out) where it is one.
    """
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else ()
    if type(None) in options:
        if value is None:
            return None
        rest = [option for option in options if option is not type(None)]
        if len(rest) == 1:
            hint = rest[0]  # X | None: an X from here on
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {_kind(value)}")
        return from_dict(hint, value, where=where, base=default if type(default) is hint else None)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return _literal(args, value, where)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(value, (list, tuple)):
            write = f"; write [{value}]" if isinstance(value, (str, int, float)) else ""
            raise ConfigError(f"{where}: expected a list, got {_kind(value)}{write}")
        return tuple(_convert(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is tuple and isinstance(value, list):
        return tuple(value)
    if origin is dict and len(args) == 2:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {_kind(value)}")
        return {
            _convert(args[0], key, f"{where} key {key!r}"): _convert(args[1], item, f"{where}.{key}")
            for key, item in value.items()
        }
    if hint is str or (isinstance(hint, type) and issubclass(hint, PurePath)):
        if not isinstance(value, str):
            quote = "; quote it to mean text" if isinstance(value, (bool, int, float)) else ""
            raise ConfigError(f"{where}: expected text, got {_kind(value)}{quote}")
        return value if hint is str else hint(value)
    if hint in _SCALARS:
        return _scalar(hint, value, where)
    for option in options:
        if dataclasses.is_dataclass(option) and isinstance(value, dict):
            return _convert(option, value, where, default)
    return value


def _literal(allowed: tuple[Any, ...], value: Any, where: str) -> Any:
    """``value`` if it is one of ``allowed`` (of the same type: ``True`` is not ``1``), else a
    ConfigError naming ``where``, the value, the allowed values and the closest of them."""
    if any(type(value) is type(option) and value == option for option in allowed):
        return value
    words = [option for option in allowed if isinstance(option, str)]
    hint = ""
    if isinstance(value, bool) and words:
        hint = "; quote the word: YAML reads a bare yes, no, on or off as true or false"
    elif close := difflib.get_close_matches(str(value), words, n=1):
        hint = f" (did you mean {close[0]!r}?)"
    choices = ", ".join(repr(option) for option in allowed)
    raise ConfigError(f"{where}: expected one of {choices}, got {value!r}{hint}")


def _kind(value: Any) -> str:
    """What a YAML value is, and the value, as an error message names what it found."""
    if value is None:
        return "nothing (null)"
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "text", dict: "a mapping"}.get(
        type(value), "a list" if isinstance(value, (list, tuple)) else type(value).__name__
    )
    return f"{kind} ({reprlib.repr(value)})"


def _scalar(hint: type, value: Any, where: str) -> Any:
    """``value`` as a ``bool``, ``int`` or ``float`` field takes it, or a ConfigError naming both.

    A number written as a string is accepted: YAML reads ``1e-5`` (no dot) as the string "1e-5".
    ``True`` is never a number here, although Python's bool is an int.
    """
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if not isinstance(value, bool):
        if hint is float:
            if isinstance(value, (int, float)):
                return float(value)
            if isinstance(value, str):
                with contextlib.suppress(ValueError):
                    return float(value)
        elif isinstance(value, int):
            return value
        elif isinstance(value, float) and value.is_integer():
            return int(value)
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                return int(value)
    kind = "a number" if hint is float else "an integer"
    raise ConfigError(f"{where}: expected {kind}, got {value!r}")


def check_values(config: object, where: str = "") -> None:
    """Raise ConfigError naming the first field of the dataclass ``config``, or of a dataclass it
    holds, whose value its type refuses: a word a ``Literal`` does not list, a bool or a fraction
    for an int, text for a number, a number for text, a single word for a list.

    The command line and config files check every value as they read it; a config built in Python
    gets this check instead (training configs call it first thing), so that ``std_scaling="Group"``
    fails here, naming the field, rather than after the model has loaded. Text fields also take
    paths. Fields of other types are left to the config's own checks.
    """
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):  # type: ignore[arg-type]
        if field.init:
            name = f"{where}.{field.name}" if where else field.name
            _check_value(hints[field.name], getattr(config, field.name), name)


def _check_value(hint: Any, value: Any, where: str) -> None:
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else ()
    if type(None) in options:
        if value is None:
            return
        rest = [option for option in options if option is not type(None)]
        if len(rest) != 1:
            return
        hint = rest[0]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if not isinstance(value, hint):
            raise ConfigError(f"{where}: expected a {hint.__name__}, got {_kind(value)}")
        check_values(value, where)
    elif origin is typing.Literal:
        _literal(args, value, where)
    elif hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{where}: expected an integer, got {_kind(value)}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{where}: expected a number, got {_kind(value)}")
    elif hint is str:
        if not isinstance(value, str | os.PathLike):
            raise ConfigError(f"{where}: expected text, got {_kind(value)}")
    elif origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        if not isinstance(value, tuple | list):
            raise ConfigError(f"{where}: expected a list, got {_kind(value)}")
        for i, item in enumerate(value):
            _check_value(args[0], item, f"{where}[{i}]")
    elif origin is dict and len(args) == 2:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {_kind(value)}")
        for key, item in value.items():
            _check_value(args[0], key, f"{where} key {key!r}")
            _check_value(args[1], item, f"{where}.{key}")
