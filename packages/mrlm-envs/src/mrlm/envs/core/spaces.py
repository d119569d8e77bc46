"""Text spaces that accept any string and pass the official Gymnasium and PettingZoo checkers.

``gymnasium.spaces.Text`` only admits characters from its charset (alphanumeric by default), and a
full-Unicode charset is far too expensive to build. Model output and task text are arbitrary Unicode,
so :class:`TextSpace` keeps ``Text``'s length bounds but accepts every character. It samples from
printable ASCII, with the sampled length capped so that random actions stay small.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

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
        """Arbitrary Unicode has no fixed-size integer encoding, so the space does not flatten."""
        return False

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


def text_observation_space(max_length: int = DEFAULT_MAX_OBSERVATION_LENGTH) -> spaces.Dict:
    """The observation space of multi-agent text envs: ``{"text": str}``.

    PettingZoo's AEC ``api_test`` compares ``space.dtype`` with ``observation.dtype``, which a bare ``str``
    lacks; a ``Dict`` observation is checked key by key and passes. The same shape is used in AEC and
    parallel envs so that converting between them changes nothing.
    """
    return spaces.Dict({"text": TextSpace(max_length)})
