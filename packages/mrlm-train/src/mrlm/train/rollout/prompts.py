"""The system prompt each agent's conversation opens with.

A single-agent env's reset info may carry ``"system_prompt"``; it opens the conversation as is. In a
multi-agent env the same holds per agent, and a line naming the agent follows it, so that a model
playing several agents knows which role it plays (the envs' observations describe the role itself).
An agent's own model (``Policy.agent``: trained to play that agent alone, as ``policies="per_agent"``
and ``"lora"`` train them, and recorded in their final directories, see
:func:`~mrlm.train.policy.own_agent`) always plays the same role: its conversation opens without
that line, as a prompt written for one agent (a CoMLRL formatter's, say) reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: ``system_prompt(agent, reset_info)``: the system prompt of an agent (None for none).
SystemPrompt = Callable[[str | None, Mapping[str, Any]], str | None]


def default_system_prompt(
    agent: str | None, reset_info: Mapping[str, Any], *, own_policy: bool = False
) -> str | None:
    """The env's ``system_prompt`` from the agent's reset info, then ``You are <agent>.`` for a named
    agent unless its model is its own (``own_policy``). The engine's default (``system_prompt=None``)
    passes ``own_policy`` from the agent's policy; given as ``system_prompt=`` itself, it names every
    agent."""
    given = reset_info.get("system_prompt")
    parts = [str(given)] if given else []
    if agent is not None and not own_policy:
        parts.append(f"You are {agent}.")
    return "\n\n".join(parts) or None
