"""What a writing task is: a source text, and the complementary parts two agents write from it.

Two kinds of task exist, each with fixed agent names (the roles):

================  ===========================  =================================================
kind              agents (roles)               the parts
================  ===========================  =================================================
``tldr``          ``summary``, ``expansion``   a TL;DR of a post, and a longer version of it
``introduction``  ``background``,              the motivation paragraph and the contributions
                  ``contribution``             paragraph of a paper's introduction, from its abstract
================  ===========================  =================================================

Each role has a length band in words; the task also gives the band of the ratio between the second
and the first part's lengths. A role may carry a reference text (the TL;DR of a record) against
which ROUGE is measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal, get_args

TaskKind = Literal["tldr", "introduction"]
TASK_KINDS: tuple[TaskKind, ...] = get_args(TaskKind)

#: The agents of each kind, in turn order.
AGENTS: dict[TaskKind, tuple[str, str]] = {
    "tldr": ("summary", "expansion"),
    "introduction": ("background", "contribution"),
}

#: Default length bands in words, per role.
DEFAULT_BANDS: dict[str, tuple[int, int]] = {
    "summary": (8, 35),
    "expansion": (70, 220),
    "background": (50, 160),
    "contribution": (40, 140),
}

#: Default band of words(second part) / words(first part), per kind.
DEFAULT_RATIO_BANDS: dict[TaskKind, tuple[float, float]] = {
    "tldr": (3.0, 20.0),
    "introduction": (0.4, 2.5),
}

_INSTRUCTIONS: dict[str, str] = {
    "summary": "Write the TL;DR: the gist of the post in one or two sentences, in your own words.",
    "expansion": (
        "Write an expanded version of the post: retell it in full and clearly, add the context a reader "
        "needs, and keep to the facts of the post. Do not copy its sentences."
    ),
    "background": (
        "Write the first paragraph of the paper's introduction: the problem, why it matters, and what "
        "existing approaches leave open. Do not list the paper's contributions."
    ),
    "contribution": (
        "Write the contributions paragraph of the paper's introduction: what the paper proposes, how it "
        "works in outline, and what it shows. Do not repeat the motivation."
    ),
}


@dataclass(frozen=True)
class Role:
    """One agent's part of a task.

    Attributes:
        agent: the agent's name (see :data:`AGENTS`).
        instruction: what to write, shown to the agent.
        min_words: shortest length in the band (inclusive).
        max_words: longest length in the band (inclusive).
        reference: a reference text for this part (ROUGE is measured against it), or None.
    """

    agent: str
    instruction: str
    min_words: int
    max_words: int
    reference: str | None = None

    @property
    def band(self) -> tuple[int, int]:
        return (self.min_words, self.max_words)


@dataclass(frozen=True)
class WritingTask:
    """A source text and the two roles written from it.

    Attributes:
        kind: ``"tldr"`` or ``"introduction"``.
        title: a short title (the post's or the paper's), possibly empty.
        source: the text the parts are written from (a post, or an abstract).
        roles: the two roles, in turn order; ``roles[1]`` is the one expected to be longer for
            ``tldr``, and the ratio band is of ``roles[1]`` over ``roles[0]``.
        ratio_band: accepted range of ``words(roles[1]) / words(roles[0])``.
        origin: ``"builtin"`` or ``"records"``.
        index: the task's position in its collection.
        context: other facts shown with the source (e.g. ``{"subreddit": "r/cooking"}``).
    """

    kind: TaskKind
    title: str
    source: str
    roles: tuple[Role, Role]
    ratio_band: tuple[float, float]
    origin: str = "builtin"
    index: int = 0
    context: Mapping[str, str] | None = None

    @property
    def agents(self) -> tuple[str, str]:
        return (self.roles[0].agent, self.roles[1].agent)

    def role(self, agent: str) -> Role:
        """The role of ``agent``; KeyError naming the task's agents otherwise."""
        for role in self.roles:
            if role.agent == agent:
                return role
        raise KeyError(f"no agent {agent!r} in a {self.kind} task; agents are {', '.join(self.agents)}")

    def partner(self, agent: str) -> Role:
        """The other role."""
        return self.roles[1] if self.roles[0].agent == agent else self.roles[0]

    def with_bands(self, bands: Mapping[str, tuple[int, int]]) -> WritingTask:
        """This task with the length bands of the named agents replaced."""
        roles = tuple(
            replace(role, min_words=bands[role.agent][0], max_words=bands[role.agent][1])
            if role.agent in bands
            else role
            for role in self.roles
        )
        return replace(self, roles=(roles[0], roles[1]))


def make_role(agent: str, reference: str | None = None) -> Role:
    """A role with its default instruction and band."""
    low, high = DEFAULT_BANDS[agent]
    return Role(agent, _INSTRUCTIONS[agent], low, high, reference)


def check_band(agent: str, band: object) -> tuple[int, int]:
    """``band`` as ``(low, high)`` words; ValueError naming ``agent`` unless ``0 < low <= high``."""
    if (
        not isinstance(band, (tuple, list))
        or len(band) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in band)
        or not 0 < band[0] <= band[1]
    ):
        raise ValueError(f"the length band of {agent!r} must be two ints 0 < low <= high, got {band!r}")
    return (band[0], band[1])
