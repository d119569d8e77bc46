"""The motions debated: a built-in list written for MRLM, or the user's own.

A motion is one statement that PRO defends and CON attacks. The built-in list spans cities, schools,
health, the economy, technology, the environment, culture and sport, so that a policy cannot win by
knowing one field. It ships as ``data/motions.jsonl`` in this package, one motion (a JSON string) a
line, and is checked by :func:`check_motions` as a user's ``topics`` are.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from mrlm.envs._package_data import data_file
from mrlm.envs.core.records import read_jsonl
from mrlm.envs.debate.text import clean_turn, content_words

#: Longest motion accepted, in characters: a motion is a sentence, not a document.
MAX_MOTION_CHARS = 500

#: The built-in motions.
MOTIONS: tuple[str, ...]


def check_motions(topics: Iterable[str] | None) -> tuple[str, ...]:
    """The motions to draw from: ``topics`` checked and cleaned, or :data:`MOTIONS` when None.

    Raises:
        ValueError: ``topics`` is a bare string, is empty, or holds a motion that is not a string, is
            longer than :data:`MAX_MOTION_CHARS`, or has no content word (nothing to stay on topic with).
    """
    if topics is None:
        return MOTIONS
    if isinstance(topics, str):
        raise ValueError("topics must be a list of motions, not one string; write topics=[motion]")
    motions: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            raise ValueError(f"every topic must be a str, got {type(topic).__name__}")
        if len(topic.strip()) > MAX_MOTION_CHARS:
            raise ValueError(f"a motion has at most {MAX_MOTION_CHARS} characters, got {len(topic.strip())}")
        motion, _ = clean_turn(topic, MAX_MOTION_CHARS)
        if not content_words(motion):
            raise ValueError(f"the motion {topic!r} has no content words to debate")
        motions.append(motion)
    if not motions:
        raise ValueError("topics is empty; give at least one motion or None for the built-in list")
    return tuple(motions)


def choose_motion(rng: np.random.Generator, motions: tuple[str, ...]) -> str:
    """One motion, drawn uniformly with ``rng`` (the env's seeded generator)."""
    return motions[int(rng.integers(len(motions)))]


with data_file("mrlm.envs.debate", "motions.jsonl") as _path:
    MOTIONS = check_motions(read_jsonl(_path))
