"""The system prompt each agent's conversation opens with.

A single-agent env's reset info may carry ``"system_prompt"``; it opens the conversation as is. In a
multi-agent env the same holds per agent, and a line naming the agent follows it, so that a model
playing several agents knows which role it plays (the envs' observations describe the role itself).
Each agent's own model (``policies="per_agent"``, ``"lora"``) always plays the same role and is
trained without that line (``Policy.names_agent`` False), as a prompt written for one agent (a
CoMLRL formatter's, say) reads; its saved directory records so
(:func:`~mrlm.train.policy.names_agent`), for evaluations to open its conversations the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: ``system_prompt(agent, reset_info)``: the system prompt of an agent (None for none).
SystemPrompt = Callable[[str | None, Mapping[str, Any]], str | None]


def default_system_prompt(
    agent: str | None, reset_info: Mapping[str, Any], *, names_agent: bool = True
) -> str | None:
    """The env's ``system_prompt`` from the agent's reset info, then, with ``names_agent``,
    ``You are <agent>.`` for a named agent. The engine's default (``system_prompt=None``) passes
    the agent's policy's ``names_agent``; given as ``system_prompt=`` itself, it names every agent."""
    given = reset_info.get("system_prompt")
    parts = [str(given)] if given else []
    if agent is not None and names_agent:
        parts.append(f"You are {agent}.")
    return "\n\n".join(parts) or None
