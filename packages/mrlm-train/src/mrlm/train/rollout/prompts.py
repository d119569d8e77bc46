"""The system prompt each agent's conversation opens with.

A single-agent env's reset info may carry ``"system_prompt"``; it opens the conversation as is. In a
multi-agent env the same holds per agent, and a line naming the agent follows it, so that one shared
policy knows which role it plays (the envs' observations describe the role itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: ``system_prompt(agent, reset_info)``: the system prompt of an agent (None for none).
SystemPrompt = Callable[[str | None, Mapping[str, Any]], str | None]


def default_system_prompt(agent: str | None, reset_info: Mapping[str, Any]) -> str | None:
    """The env's ``system_prompt`` from the agent's reset info, then ``You are <agent>.`` for a named agent."""
    given = reset_info.get("system_prompt")
    parts = [str(given)] if given else []
    if agent is not None:
        parts.append(f"You are {agent}.")
    return "\n\n".join(parts) or None
