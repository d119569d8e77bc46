"""The seeded task generator: pick a topic, then let that topic's generator draw a task of a level.

Topics (the level sets number sizes and steps; see each module for what every level means):

=================== ================================ ==========================================
topic               what                             answer
=================== ================================ ==========================================
``integers``        evaluate an integer expression   an integer
``decimals``        evaluate a decimal expression    a terminating decimal
``fractions``       evaluate a fraction expression   a reduced fraction or integer
``linear_equation`` solve for x                      a number
``linear_system``   solve two equations in x and y   an ordered pair ``(x, y)``
``inequality``      solve a linear inequality        an interval, ``(-\\infty, 5]``
``word_problem``    a story (five templates)         a number
``multi_step``      a chain of operations, f(g(n))   an integer
=================== ================================ ==========================================

Groups ``arithmetic`` (integers, decimals, fractions) and ``algebra`` (linear_equation, linear_system,
inequality) name several topics at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from mrlm.envs.math.algebra import inequality_task, linear_equation_task, linear_system_task
from mrlm.envs.math.arithmetic import decimals_task, fractions_task, integers_task
from mrlm.envs.math.multistep import multi_step_task
from mrlm.envs.math.tasks import LEVELS, MathTask, is_level
from mrlm.envs.math.word_problems import word_problem_task

_GENERATORS: dict[str, Callable[[np.random.Generator, int], MathTask]] = {
    "integers": integers_task,
    "decimals": decimals_task,
    "fractions": fractions_task,
    "linear_equation": linear_equation_task,
    "linear_system": linear_system_task,
    "inequality": inequality_task,
    "multi_step": multi_step_task,
    "word_problem": word_problem_task,
}

#: Every topic, in the order a topic is drawn by index.
TOPICS: tuple[str, ...] = tuple(_GENERATORS)

#: Names for several topics at once.
TOPIC_GROUPS: dict[str, tuple[str, ...]] = {
    "arithmetic": ("integers", "decimals", "fractions"),
    "algebra": ("linear_equation", "linear_system", "inequality"),
}


def resolve_topics(topics: str | Iterable[str] | None) -> tuple[str, ...]:
    """The topics named by ``topics`` (topic or group names; None for all), in :data:`TOPICS` order.

    Raises:
        ValueError: an unknown name, or no name at all.
    """
    if topics is None:
        return TOPICS
    names = [topics] if isinstance(topics, str) else list(topics)
    chosen: set[str] = set()
    for name in names:
        if name in TOPIC_GROUPS:
            chosen.update(TOPIC_GROUPS[name])
        elif name in _GENERATORS:
            chosen.add(name)
        else:
            known = ", ".join([*TOPICS, *TOPIC_GROUPS])
            raise ValueError(f"unknown math topic {name!r}; topics are: {known}")
    if not chosen:
        raise ValueError("topics must name at least one topic (or be None for all)")
    return tuple(topic for topic in TOPICS if topic in chosen)


def generate_task(
    rng: np.random.Generator, level: int, topics: str | Iterable[str] | None = None
) -> MathTask:
    """Draw one task of difficulty ``level`` (1-5) from ``rng``.

    The topic is drawn uniformly from ``topics`` (see :func:`resolve_topics`; all topics when None),
    then the task from that topic's generator. Only ``rng`` is used, so the same generator state always
    gives the same task.
    """
    if not is_level(level):
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    return draw_task(rng, int(level), resolve_topics(topics))


def draw_task(rng: np.random.Generator, level: int, topics: tuple[str, ...]) -> MathTask:
    """:func:`generate_task` for a valid level and already resolved topics (no checks: the env's path)."""
    topic = topics[int(rng.integers(len(topics)))]
    return _GENERATORS[topic](rng, level)
