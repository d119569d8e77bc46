"""JSON text for the ``*_json`` fields and ``Value.json`` of ``env.proto``.

Contract:

- ``encode_json(value)`` writes compact UTF-8 JSON that ``decode_json`` turns back into an equal value
  of the same types: ``bool`` stays ``bool``, ``int`` stays ``int`` (any size), ``float`` stays
  ``float`` (``1.0`` is written ``1.0``), ``None``, ``str``, lists and dicts nested at will.
- Tuples become lists. NumPy-like values are converted by duck typing, without importing NumPy:
  anything with ``.tolist()`` (arrays, NumPy scalars) or else ``.item()`` is replaced by its result.
- Values that would not come back as they went are refused with a ``ValueError`` naming where they
  sit (e.g. ``$['info']['x'][0]``): non-finite floats (NaN and infinities are not JSON), dict keys
  that are not strings (JSON would silently turn ``1`` into ``"1"``) and any other type (bytes, sets,
  arbitrary objects).
- Strings with lone surrogates (which UTF-8 cannot encode) are written with JSON's ``\\uXXXX``
  escapes, so the text stays valid UTF-8 and decodes to the same string.
- ``decode_json("")`` is ``{}``: an empty ``*_json`` field means "no entries". Malformed JSON, and
  the non-standard ``NaN``/``Infinity`` tokens, raise a ``ValueError`` saying where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["decode_json", "decode_json_object", "encode_json", "has_lone_surrogate"]


def encode_json(value: object) -> str:
    """Encode ``value`` as compact JSON text; raise ``ValueError`` for anything that cannot round-trip."""
    try:
        plain = _plain(value, "$")
    except RecursionError:
        # A container holding itself (or absurd nesting) would otherwise surface as RecursionError.
        raise ValueError("$: value is circular or nested too deeply") from None
    # ensure_ascii=False: protobuf strings are UTF-8 anyway, and it keeps the text readable.
    text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if not text.isascii() and has_lone_surrogate(text):
        # A lone surrogate has no UTF-8 form, so no protobuf string can carry it as it is; JSON's
        # \uXXXX escape can, and decodes to the same Python string.
        text = json.dumps(plain, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot encode."""
    return _LONE_SURROGATE.search(text) is not None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_json(text: str) -> Any:
    """Decode JSON text; ``""`` decodes to ``{}``. Raise ``ValueError`` on malformed JSON."""
    if text == "":
        return {}
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"malformed JSON at line {error.lineno} column {error.colno}: {error.msg}") from None


def decode_json_object(text: str) -> dict[str, Any]:
    """Decode JSON text that must be an object (kwargs, options, infos, metadata); ``""`` is ``{}``."""
    value = decode_json(text)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}: {text[:80]!r}")
    return value


def _plain(value: object, path: str) -> Any:
    """Return ``value`` as plain JSON-able Python types, checking it on the way."""
    # bool before int: bool is a subclass of int but must stay bool.
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # int() strips subclasses (IntEnum) so json writes the bare number.
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: non-finite float {value!r} is not JSON")
        # float() also turns numpy.float64, a float subclass, into a plain float.
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: dict key {key!r} is not a string")
            plain[str.__str__(key)] = _plain(item, f"{path}[{key!r}]")
        return plain
    return _plain(_unwrap(value, path), path)


def _unwrap(value: object, path: str) -> object:
    """Convert a NumPy-like array or scalar to Python values through ``.tolist()`` or ``.item()``."""
    for method in ("tolist", "item"):
        convert = getattr(value, method, None)
        if callable(convert):
            result = convert()
            # Guard against a conversion that hands back its own kind, which would recurse forever.
            if type(result) is type(value):
                break
            return result
    raise ValueError(f"{path}: {type(value).__name__} is not JSON-encodable")


def _reject_constant(token: str) -> Any:
    """Refuse the non-standard NaN, Infinity and -Infinity tokens that ``json.loads`` accepts."""
    raise ValueError(f"malformed JSON: {token} is not a JSON number")
