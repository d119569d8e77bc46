"""Decoding the JSON a client sends (keyword arguments, reset options), nesting bounded.

JSON nested thousands deep makes Python's decoder raise ``RecursionError``, and anything that walks
the value later (an env, the encoder of its info) recurses as deep. Such values are refused here with
INVALID_ARGUMENT: nothing an env takes needs more than :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

from typing import Any

import grpc

from mrlm.envs.server.errors import RequestError
from mrlm.proto.json_codec import decode_json_object

__all__ = ["MAX_DEPTH", "decode_client_object", "depth_error"]

#: Deepest nesting of arrays and objects accepted from a client.
MAX_DEPTH = 32


def decode_client_object(text: str, field: str) -> dict[str, Any]:
    """The JSON object ``text`` holds (``""`` is ``{}``); INVALID_ARGUMENT naming ``field`` otherwise."""
    try:
        value = decode_json_object(text)
    except ValueError as error:
        raise RequestError(grpc.StatusCode.INVALID_ARGUMENT, f"{field}: {error}") from None
    except RecursionError:
        raise depth_error(field) from None
    _check_depth(value, field)
    return value


def depth_error(field: str) -> RequestError:
    """The refusal of a value nested too deeply."""
    return RequestError(
        grpc.StatusCode.INVALID_ARGUMENT,
        f"{field}: JSON nested deeper than {MAX_DEPTH} levels is not accepted",
    )


def _check_depth(value: Any, field: str) -> None:
    # Iterative, level by level: a recursive walk is what must not happen on client data.
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, (list, dict))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not any(isinstance(item, (list, dict)) for item in level):
            return
    raise depth_error(field)
