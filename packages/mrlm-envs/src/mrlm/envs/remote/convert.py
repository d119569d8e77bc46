"""Spaces, values and env kinds to and from their ``env.proto`` messages.

Server and clients share these functions so that what goes through the wire comes back equal:

- Spaces: :class:`~mrlm.envs.core.spaces.TextSpace` (an empty charset on the wire), ``Text`` with its
  charset, ``Discrete``, ``Box`` and ``Dict``, nested at will, are rebuilt as equal spaces. Any other
  space travels as an unset ``Space`` and comes back as an :class:`OpaqueSpace`.
- Values: a ``str`` is ``Value.text``; ``None`` is an unset ``Value``; anything else is JSON
  (``mrlm.proto.json_codec``) and is given back the types its space implies: ``numpy.int64`` for
  ``Discrete``, an array of the space's dtype and shape for ``Box``, per key for ``Dict``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from mrlm.envs.core.spaces import TextSpace
from mrlm.envs.registry import EnvKind
from mrlm.proto.json_codec import decode_json, encode_json, has_lone_surrogate
from mrlm.proto.v1 import env_pb2 as pb

__all__ = [
    "KIND_FROM_PROTO",
    "KIND_TO_PROTO",
    "OpaqueSpace",
    "set_value",
    "space_from_proto",
    "space_to_proto",
    "value_from_proto",
    "value_to_proto",
]

KIND_TO_PROTO: dict[EnvKind, pb.EnvKind] = {
    "gymnasium": pb.ENV_KIND_GYMNASIUM,
    "aec": pb.ENV_KIND_AEC,
    "parallel": pb.ENV_KIND_PARALLEL,
}
KIND_FROM_PROTO: dict[int, EnvKind] = {number: kind for kind, number in KIND_TO_PROTO.items()}


class OpaqueSpace(spaces.Space[Any]):
    """A space the server could not describe: it contains anything and cannot be sampled."""

    def contains(self, x: Any) -> bool:
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        raise NotImplementedError("the server did not describe this space, so it cannot be sampled")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueSpace)

    def __hash__(self) -> int:
        return hash(OpaqueSpace)

    def __repr__(self) -> str:
        return "OpaqueSpace()"


def space_to_proto(space: spaces.Space[Any]) -> pb.Space:
    """Describe ``space``; an unset ``Space`` when it is none of the kinds the contract knows."""
    if isinstance(space, TextSpace):
        # Empty charset: "any text", which is what TextSpace admits (its charset only drives sampling).
        return pb.Space(text=pb.TextSpace(min_length=space.min_length, max_length=space.max_length))
    if isinstance(space, spaces.Text):
        text = pb.TextSpace(
            min_length=space.min_length, max_length=space.max_length, charset=space.characters
        )
        return pb.Space(text=text)
    if isinstance(space, spaces.Discrete):
        return pb.Space(discrete=pb.DiscreteSpace(n=int(space.n), start=int(space.start)))
    if isinstance(space, spaces.Box):
        box = pb.BoxSpace(
            low=np.asarray(space.low, dtype=np.float64).ravel().tolist(),
            high=np.asarray(space.high, dtype=np.float64).ravel().tolist(),
            shape=list(space.shape),
            dtype=np.dtype(space.dtype).name,
        )
        return pb.Space(box=box)
    if isinstance(space, spaces.Dict):
        return pb.Space(dict=pb.DictSpace(spaces={key: space_to_proto(sub) for key, sub in space.items()}))
    return pb.Space()


def space_from_proto(message: pb.Space) -> spaces.Space[Any]:
    """Rebuild the space ``message`` describes (an :class:`OpaqueSpace` when it describes none)."""
    which = message.WhichOneof("kind")
    if which == "text":
        text = message.text
        if not text.charset:
            return TextSpace(text.max_length, min_length=text.min_length)
        return spaces.Text(text.max_length, min_length=text.min_length, charset=text.charset)
    if which == "discrete":
        return spaces.Discrete(message.discrete.n, start=message.discrete.start)
    if which == "box":
        box = message.box
        shape = tuple(int(size) for size in box.shape)
        dtype = np.dtype(box.dtype)
        low = np.asarray(box.low, dtype=np.float64).reshape(shape)
        high = np.asarray(box.high, dtype=np.float64).reshape(shape)
        return spaces.Box(low=low.astype(dtype), high=high.astype(dtype), shape=shape, dtype=dtype)
    if which == "dict":
        return spaces.Dict({key: space_from_proto(sub) for key, sub in message.dict.spaces.items()})
    return OpaqueSpace()


def value_to_proto(value: Any) -> pb.Value:
    """A ``Value`` holding ``value``: text for a ``str``, unset for ``None``, JSON otherwise.

    A text with a lone surrogate, which UTF-8 (and so a protobuf string) cannot hold, goes as
    JSON, whose escapes carry it; the other side reads the same string.

    Raises ``ValueError`` (from the JSON codec) for values that are not JSON-encodable.
    """
    if isinstance(value, str) and not has_lone_surrogate(value):
        return pb.Value(text=value)
    if value is None:
        return pb.Value()
    return pb.Value(json=encode_json(value))


def set_value(target: pb.Value, value: Any) -> None:
    """Fill ``target`` (a field of a message being built) with ``value``, as :func:`value_to_proto`.

    Filling the field in place avoids building a ``Value`` apart, which the parent would copy.
    """
    if isinstance(value, str) and not has_lone_surrogate(value):
        target.text = value
    elif value is not None:
        target.json = encode_json(value)


def value_from_proto(message: pb.Value, space: spaces.Space[Any] | None) -> Any:
    """The value ``message`` holds, with the types ``space`` implies (see the module docstring).

    Raises ``ValueError`` for malformed JSON or a JSON value that cannot take the space's shape.
    """
    which = message.WhichOneof("kind")
    if which == "text":
        return message.text
    if which is None:
        return None
    return _typed(decode_json(message.json), space)


def _typed(value: Any, space: spaces.Space[Any] | None) -> Any:
    """Give a decoded JSON value the Python/NumPy types that members of ``space`` have."""
    if isinstance(space, spaces.Discrete) and isinstance(value, int) and not isinstance(value, bool):
        return np.int64(value)
    if isinstance(space, spaces.Box) and isinstance(value, (list, int, float)):
        try:
            return np.asarray(value, dtype=space.dtype).reshape(space.shape)
        except (TypeError, ValueError) as error:
            raise ValueError(f"a value of shape {space.shape} was expected: {error}") from None
    if isinstance(space, spaces.Dict) and isinstance(value, dict):
        return {key: _typed(item, space.spaces.get(key)) for key, item in value.items()}
    return value
