"""Text spaces that accept any string and pass the official Gymnasium and PettingZoo checkers.

``gymnasium.spaces.Text`` only admits characters from its charset (alphanumeric by default), and a
full-Unicode charset is far too expensive to build. Model output and task text are arbitrary Unicode,
so :class:`TextSpace` keeps ``Text``'s length bounds but accepts every character. It samples from
printable ASCII, with the sampled length capped so that random actions stay small.

Flattening follows membership: Gymnasium's ``flatten``, ``unflatten`` and ``flatten_space`` encode a
``TextSpace`` value as its Unicode code points plus one, padded with zeros to ``max_length``
(``int32``), so every string the space contains round-trips, whatever its characters (``Text``'s own
encoding indexes its charset and raises ``KeyError`` on any other character). Shared memory is refused
with a clear error: ``AsyncVectorEnv(shared_memory=True)`` reads its buffer once, expecting arrays that
follow it, which a ``str`` cannot be (with ``Text`` it silently returns the empty buffer's text on every
step); ``shared_memory=False`` and ``SyncVectorEnv`` carry any text.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector.utils.shared_memory import create_shared_memory
from numpy.typing import NDArray

#: Characters used when sampling; membership is not restricted to them.
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n"

#: Default longest observation, in characters: room for a task plus a long transcript.
DEFAULT_MAX_OBSERVATION_LENGTH = 1 << 18

#: Default longest action, in characters: far beyond any generation budget a trainer would set.
DEFAULT_MAX_ACTION_LENGTH = 1 << 16


class TextSpace(spaces.Text):
    """Any ``str`` whose length lies in ``[min_length, max_length]``.

    Args:
        max_length: the longest string allowed, in characters.
        min_length: the shortest string allowed, in characters (0 admits the empty string).
        sample_max_length: the longest string :meth:`sample` draws without a length mask.
        seed: seed of the sampling generator.

    Example:
        >>> space = TextSpace(32)
        >>> space.contains("héllo, wörld!\\n")
        True
        >>> space.contains("x" * 33)
        False
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        sample_max_length: int = 64,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)
        if sample_max_length < min_length:
            raise ValueError(f"sample_max_length ({sample_max_length}) is below min_length ({min_length})")
        self.sample_max_length = int(min(sample_max_length, max_length))

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random printable-ASCII string of at most ``sample_max_length`` characters.

        With a mask or probability, behaves as ``gymnasium.spaces.Text.sample``.
        """
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, self.sample_max_length + 1))
            return super().sample(mask=(length, None))
        return super().sample(mask=mask, probability=probability)

    def contains(self, x: Any) -> bool:
        """True for any ``str`` of allowed length, whatever its characters."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        """True: any string of the space flattens to ``max_length`` code points (see the module)."""
        return True

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, TextSpace)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((type(self), self.min_length, self.max_length))

    def __repr__(self) -> str:
        return f"TextSpace(min_length={self.min_length}, max_length={self.max_length})"


#: Code points run to 0x10FFFF; stored plus one, so that 0 pads.
_FLAT_HIGH = 0x110000


@flatten_space.register(TextSpace)
def _flatten_space(space: TextSpace) -> spaces.Box:
    return spaces.Box(low=0, high=_FLAT_HIGH, shape=(space.max_length,), dtype=np.int32)


# mypy reads flatten's and unflatten's ``Space[T]`` fallbacks as unrelated to a subclass of Text.
@flatten.register(TextSpace)
def _flatten(space: TextSpace, x: str) -> NDArray[np.int32]:  # type: ignore[misc]
    if not space.contains(x):
        raise ValueError(f"cannot flatten {x!r:.40}: not a member of {space}")
    flat = np.zeros(space.max_length, dtype=np.int32)
    flat[: len(x)] = np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype="<u4") + 1
    return flat


@unflatten.register(TextSpace)
def _unflatten(space: TextSpace, x: NDArray[np.int32]) -> str:  # type: ignore[misc]
    return "".join(chr(code - 1) for code in np.asarray(x).tolist() if code > 0)


@create_shared_memory.register(TextSpace)
def _create_shared_memory(space: TextSpace, n: int = 1, ctx: Any = None) -> Any:
    raise CustomSpaceError(
        "TextSpace observations are str; AsyncVectorEnv(shared_memory=True) reads its buffer once as "
        "arrays and would return stale strings. Pass shared_memory=False (or use SyncVectorEnv)."
    )


def text_observation_space(max_length: int = DEFAULT_MAX_OBSERVATION_LENGTH) -> spaces.Dict:
    """The observation space of multi-agent text envs: ``{"text": str}``.

    PettingZoo's AEC ``api_test`` compares ``space.dtype`` with ``observation.dtype``, which a bare ``str``
    lacks; a ``Dict`` observation is checked key by key and passes. The same shape is used in AEC and
    parallel envs so that converting between them changes nothing.
    """
    return spaces.Dict({"text": TextSpace(max_length)})
