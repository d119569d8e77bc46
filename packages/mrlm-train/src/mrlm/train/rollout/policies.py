"""Who plays whom: policies (a generator, its tokenizer, its sampling) and the map from agent to policy.

A rollout engine holds named :class:`Policy` records. Every agent of an env is played by one of them:
one shared policy for every agent (its role then comes from the agent's system prompt and
observations), one policy per agent, or any mix. :class:`PolicyTable` resolves an agent's policy
from ``agent_policies``, a mapping or a callable; the single-agent case is the agent ``None``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mrlm.train.generation.base import Generator, SamplingParams

#: The name of the policy of an engine built with one generator (and of old trajectories).
DEFAULT_POLICY = "policy"

#: An agent's policy name: a mapping from agent to policy name, or a callable ``agent -> name``.
AgentPolicies = Mapping[str | None, str] | Callable[[str | None], str]


class NoPolicyError(KeyError):
    """An agent that no policy plays. Shown as its message alone (a KeyError would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Policy:
    """One model as the rollout sees it.

    Attributes:
        generator: samples its replies.
        tokenizer: its tokenizer, with a chat template; the token ids of its trajectories are its ids.
        sampling: its sampling parameters; None takes the engine's ``sampling``.
        names_agent: whether its conversations open with the line naming the agent it plays
            (:func:`~mrlm.train.rollout.prompts.default_system_prompt`): True for a model that plays
            several agents; False for a model trained without it, as each agent's own model
            (``policies="per_agent"``, ``"lora"``) is.
    """

    generator: Generator
    tokenizer: Any
    sampling: SamplingParams | None = None
    names_agent: bool = True


class PolicyTable:
    """The engine's policies and the agent-to-policy map, checked when built.

    Args:
        policies: the policies by name (at least one); the order fixes their sampling streams.
        sampling: the default sampling of policies without their own.
        agent_policies: the policy name of each agent. None: every agent plays the only policy or,
            with several policies, the policy named like the agent.
    """

    def __init__(
        self,
        policies: Mapping[str, Policy],
        sampling: SamplingParams | None,
        agent_policies: AgentPolicies | None = None,
    ) -> None:
        if not policies:
            raise ValueError("a rollout needs at least one policy")
        self.policies: dict[str, Policy] = {}
        for name, policy in policies.items():
            if policy.sampling is None and sampling is None:
                raise ValueError(f"policy {name!r} has no sampling parameters and the engine gives none")
            if policy.tokenizer is None:
                raise ValueError(f"policy {name!r} has no tokenizer")
            self.policies[name] = (
                policy if policy.sampling is not None else dataclasses.replace(policy, sampling=sampling)
            )
        self.agent_policies = agent_policies

    def __getitem__(self, name: str) -> Policy:
        return self.policies[name]

    def names(self) -> list[str]:
        return list(self.policies)

    def sampling(self, name: str) -> SamplingParams:
        sampling = self.policies[name].sampling
        assert sampling is not None  # filled in __init__
        return sampling

    def of(self, agent: str | None) -> str:
        """The name of the policy that plays ``agent`` (``None`` in single-agent envs).

        Raises:
            KeyError: the map names no policy for ``agent``, or names one that does not exist.
        """
        chosen = self._choose(agent)
        if chosen not in self.policies:
            raise KeyError(
                f"agent {agent!r} is mapped to policy {chosen!r}, but the policies are {self.names()}"
            )
        return chosen

    def replace(self, name: str, **changes: Any) -> None:
        """Swap a field of one policy (a new generator after a weight update, say)."""
        self.policies[name] = dataclasses.replace(self.policies[name], **changes)

    def _choose(self, agent: str | None) -> str:
        given = self.agent_policies
        if given is None:
            if len(self.policies) == 1:
                return next(iter(self.policies))
            if agent is not None and agent in self.policies:
                return agent
            raise NoPolicyError(
                f"no policy for agent {agent!r}: the policies are {self.names()}, one per agent the env "
                "listed in possible_agents when the run began (an env's possible_agents must name every "
                "agent it will ever have); with the rollout engine itself, give agent_policies or name "
                "each policy like its agent"
            )
        if isinstance(given, Mapping):
            if agent not in given:
                raise NoPolicyError(
                    f"agent_policies names no policy for agent {agent!r} (it maps {list(given)})"
                )
            return given[agent]
        return given(agent)
