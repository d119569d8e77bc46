"""The text each writer reads: the task, its role and length band, the source, and the latest parts.

Long texts are cut for display (the source at :data:`MAX_SOURCE_CHARS`, a part at
:data:`MAX_PART_CHARS`, a title or other field at :data:`MAX_FIELD_CHARS`) so that an observation
stays bounded whatever the agents and records hold; scoring always uses the full parts. Section
headers are fixed lines (``=== Post ===``) so that a scripted agent can find the source.
"""

from __future__ import annotations

from mrlm.envs.writing.tasks import WritingTask

MAX_SOURCE_CHARS = 20_000
MAX_PART_CHARS = 6_000
MAX_FIELD_CHARS = 500

_SOURCE_NAME = {"tldr": "Post", "introduction": "Abstract"}
_GOAL = {
    "tldr": "Together with your teammate, write a TL;DR of the post below and an expanded version of it.",
    "introduction": (
        "Together with your teammate, write the opening of the introduction of the paper whose abstract "
        "is below: one of you the background paragraph, the other the contributions paragraph."
    ),
}


def source_header(task: WritingTask) -> str:
    """The line that opens the source section, e.g. ``=== Post ===``."""
    return f"=== {_SOURCE_NAME[task.kind]} ==="


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


def task_text(
    task: WritingTask,
    agent: str,
    *,
    round: int,
    rounds: int,
    own: str | None,
    partner: str | None,
    last_score: float | None,
) -> str:
    """The observation of ``agent`` while the text is being written."""
    role, other = task.role(agent), task.partner(agent)
    lines = [
        f"Task: {task.kind}. {_GOAL[task.kind]}",
        f"Your role: {role.agent}. {role.instruction}",
        f"Length: {role.min_words}-{role.max_words} words.",
        f"Your teammate ({other.agent}) writes {other.min_words}-{other.max_words} words.",
        f"Round {round} of {rounds}.",
        "",
    ]
    if task.title:
        lines.append(f"Title: {clip(task.title, MAX_FIELD_CHARS)}")
    for name, value in (task.context or {}).items():
        lines.append(f"{name.capitalize()}: {clip(value, MAX_FIELD_CHARS)}")
    lines += [source_header(task), clip(task.source, MAX_SOURCE_CHARS), ""]
    if partner is not None:
        lines += [f"=== Latest part of {other.agent} ===", clip(partner, MAX_PART_CHARS), ""]
    if own is not None:
        lines += ["=== Your previous part ===", clip(own, MAX_PART_CHARS), ""]
    if last_score is not None:
        lines.append(f"Team score of the previous round: {last_score:.3f} (0 to 1).")
    lines.append(f"Reply with your {role.agent} part only.")
    return "\n".join(lines)


def closing_text(task: WritingTask, agent: str, score: float, rounds: int) -> str:
    """The observation of ``agent`` once the text is finished."""
    return (
        f"The text is finished after {rounds} round{'s' if rounds > 1 else ''}. "
        f"Team score: {score:.3f} (0 to 1). You wrote the {task.role(agent).agent} part."
    )
