"""The motions debated: a built-in list written for MRLM, or the user's own.

A motion is one statement that PRO defends and CON attacks. The built-in list spans cities, schools,
health, the economy, technology, the environment, culture and sport, so that a policy cannot win by
knowing one field.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from mrlm.envs.debate.text import clean_turn, content_words

#: Longest motion accepted, in characters: a motion is a sentence, not a document.
MAX_MOTION_CHARS = 500

MOTIONS: tuple[str, ...] = (
    "Cities should ban private cars from their centres.",
    "Homework should be abolished in primary schools.",
    "Social media platforms should verify the age of every user.",
    "Governments should pay every adult a universal basic income.",
    "Nuclear power should replace coal for generating electricity.",
    "Voting should be compulsory in national elections.",
    "Professional athletes should be allowed to use performance-enhancing drugs under medical supervision.",
    "Space exploration deserves more public funding than it receives today.",
    "University tuition should be free for every student.",
    "Zoos do more harm than good to wild animals.",
    "Artificial intelligence systems should need a licence before public release.",
    "A four-day working week should become the legal standard.",
    "Sugary drinks should carry a health tax.",
    "Museums should return cultural artefacts to their countries of origin.",
    "Standardised tests should no longer decide school admissions.",
    "Remote work is better for society than office work.",
    "Genetically modified crops should be embraced to fight hunger.",
    "Plastic packaging should be banned for fresh food.",
    "Children under twelve should not own smartphones.",
    "Tourism to fragile natural sites should be strictly limited.",
    "Public transport should be free at the point of use.",
    "Billionaires should pay a special annual wealth tax.",
    "Video games deserve recognition as a serious art form.",
    "Animal testing for cosmetics should be banned worldwide.",
    "Cash should be phased out in favour of digital payments.",
    "Learning a second language should be mandatory in secondary school.",
    "News organisations should be funded by the public rather than by advertising.",
    "Self-driving cars should be allowed on public roads today.",
    "The voting age should be lowered to sixteen.",
    "Drinking water supply should stay in public hands and never be privatised.",
    "Government software should be open source.",
    "Lab-grown meat should be promoted over livestock farming.",
)


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
