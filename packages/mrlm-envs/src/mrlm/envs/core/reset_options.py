"""Reading ``reset(options=...)``: a mapping of option names to values, or None for no options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["reset_options"]


def reset_options(options: object) -> dict[str, Any]:
    """``options`` as a dict of the env's own (the caller's stays untouched); None is no options.

    ``TypeError`` for anything else, or for a key that is not text: ``dict([1])`` would say only
    "cannot convert dictionary update sequence element #0 to a sequence".
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"reset options must be a dict of option names to values, got {type(options).__name__}"
        )
    odd = [key for key in options if not isinstance(key, str)]
    if odd:
        raise TypeError(f"reset option names must be text, got {odd[0]!r}")
    return dict(options)
