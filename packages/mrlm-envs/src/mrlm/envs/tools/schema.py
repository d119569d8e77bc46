"""A validator for the subset of JSON Schema that tool arguments use.

Tool schemas are written by this package (or by a user registering a tool) and are shown to the model,
so they must stay within what chat templates render; arguments come from model output, so they are
checked strictly before a tool runs. Supported keywords: ``type`` (``object``, ``string``,
``integer``, ``number``, ``boolean``, ``array``), ``properties``, ``required``,
``additionalProperties: false``, ``enum``, ``minimum``, ``maximum``, ``minLength``, ``maxLength``,
``items``, ``maxItems``, ``default`` and ``description``. A schema using anything else is refused
when the tool is defined, so that no constraint is silently ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "items",
        "maxItems",
        "default",
    }
)
TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array"})


class SchemaError(ValueError):
    """Arguments do not match a tool's schema; the message is fit to show the model."""


def check_schema(schema: Mapping[str, Any], where: str = "parameters") -> None:
    """Raise ``ValueError`` unless ``schema`` uses only the supported subset, consistently.

    The top level of a tool's parameters must be an ``object`` schema.
    """
    if not isinstance(schema, Mapping):
        raise ValueError(f"{where} must be a mapping, got {type(schema).__name__}")
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"{where} uses unsupported JSON-schema keywords: {sorted(unknown)}")
    kind = schema.get("type")
    if kind not in TYPES:
        raise ValueError(f"{where} must declare a type among {sorted(TYPES)}, got {kind!r}")
    if where == "parameters" and kind != "object":
        raise ValueError("a tool's parameters must be an 'object' schema")
    if schema.get("additionalProperties", False) is not False:
        raise ValueError(f"{where}: only 'additionalProperties: false' is supported")
    if kind == "object":
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            raise ValueError(f"{where}.properties must be a mapping")
        for name, sub in properties.items():
            check_schema(sub, f"{where}.{name}")
        missing = [name for name in schema.get("required", ()) if name not in properties]
        if missing:
            raise ValueError(f"{where}: required names {missing} are not among the properties")
    if kind == "array":
        if "items" not in schema:
            raise ValueError(f"{where}: an array schema needs 'items'")
        check_schema(schema["items"], f"{where}[]")
    if "enum" in schema and not schema["enum"]:
        raise ValueError(f"{where}: 'enum' must list at least one value")


def validate(value: Any, schema: Mapping[str, Any], where: str = "arguments") -> Any:
    """Check ``value`` against ``schema`` and return it cleaned.

    Cleaning fills in the ``default`` of absent optional properties and turns integral floats into
    ints where an integer is expected (JSON does not distinguish ``3`` from ``3.0``).

    Raises:
        SchemaError: on the first mismatch, naming the offending argument.
    """
    kind = schema["type"]
    checker = _CHECKERS[kind]
    cleaned = checker(value, schema, where)
    if "enum" in schema and cleaned not in schema["enum"]:
        choices = ", ".join(repr(choice) for choice in schema["enum"])
        raise SchemaError(f"{where} must be one of {choices}, got {_show(value)}")
    return cleaned


def _object(value: Any, schema: Mapping[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SchemaError(f"{where} must be an object, got {_type_name(value)}")
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = [key for key in value if key not in properties]
    if extra and schema.get("additionalProperties", True) is False:
        allowed = ", ".join(properties) or "none"
        raise SchemaError(f"{where} has unexpected {_plural('argument', extra)} (allowed: {allowed})")
    for name in schema.get("required", ()):
        if name not in value:
            raise SchemaError(f"{where} is missing the required argument '{name}'")
    cleaned: dict[str, Any] = {}
    for name, sub in properties.items():
        if name in value:
            cleaned[name] = validate(value[name], sub, f"argument '{name}'")
        elif "default" in sub:
            cleaned[name] = sub["default"]
    for name in extra:  # only reached when extra properties are allowed
        cleaned[name] = value[name]
    return cleaned


def _string(value: Any, schema: Mapping[str, Any], where: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"{where} must be a string, got {_type_name(value)}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise SchemaError(f"{where} is too long ({len(value)} characters; at most {schema['maxLength']})")
    if "minLength" in schema and len(value) < schema["minLength"]:
        raise SchemaError(f"{where} is too short ({len(value)} characters; at least {schema['minLength']})")
    return value


def _integer(value: Any, schema: Mapping[str, Any], where: str) -> int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise SchemaError(f"{where} must be an integer, got {_type_name(value)}")
    _bounds(value, schema, where)
    return value


def _number(value: Any, schema: Mapping[str, Any], where: str) -> int | float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise SchemaError(f"{where} must be a number, got {_type_name(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SchemaError(f"{where} must be a finite number")
    _bounds(value, schema, where)
    return value


def _boolean(value: Any, schema: Mapping[str, Any], where: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"{where} must be true or false, got {_type_name(value)}")
    return value


def _array(value: Any, schema: Mapping[str, Any], where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaError(f"{where} must be an array, got {_type_name(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise SchemaError(f"{where} has too many items ({len(value)}; at most {schema['maxItems']})")
    return [validate(item, schema["items"], f"{where}[{index}]") for index, item in enumerate(value)]


def _bounds(value: float, schema: Mapping[str, Any], where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise SchemaError(f"{where} must be at least {schema['minimum']}, got {value}")
    if "maximum" in schema and value > schema["maximum"]:
        raise SchemaError(f"{where} must be at most {schema['maximum']}, got {value}")


_CHECKERS = {
    "object": _object,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "array": _array,
}


def _type_name(value: Any) -> str:
    """The JSON name of a value's type, as the model wrote it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _show(value: Any) -> str:
    return _clip(repr(value))


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plural(word: str, names: list[str]) -> str:
    quoted = ", ".join(f"'{_clip(name)}'" for name in names[:5]) + (", ..." if len(names) > 5 else "")
    return f"{word}{'s' if len(names) > 1 else ''} {quoted}"
