"""The team's score of the class and each agent's penalties.

Team components, each in [0, 1]:

- ``coverage``: the share of the skeleton's methods implemented.
- ``tests``: the share of the class's tests passed.
- ``balance``: how evenly the implemented methods are split among the agents. With ``T`` methods
  implemented by ``n`` agents, the most even split gives no agent more than ``m = ceil(T / n)``;
  ``excess`` counts the methods above ``m`` over all agents (those that would have to move to reach
  the most even split), and balance is ``1 - excess / (T - m)``: 1 for the most even split, 0 when one
  agent wrote everything. It is 1 when ``T - m`` is 0 (a single method) and 0 when ``T`` is 0.

Penalties, per agent: ``idle`` when the agent owns no implemented method although it could have
had one, and one ``overwrite`` per teammate's method it implemented in the round.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mrlm.envs.core.weights import component_weights

COMPONENTS = ("coverage", "tests", "balance")

#: Default weights; they sum to 1, so a complete, correct, even split scores 1.
DEFAULT_WEIGHTS: Mapping[str, float] = {"coverage": 0.2, "tests": 0.6, "balance": 0.2}


def balance(counts: Sequence[int]) -> float:
    """How evenly ``counts`` (implemented methods per agent) are spread, in [0, 1]."""
    total = sum(counts)
    if total == 0:
        return 0.0
    most = math.ceil(total / len(counts))
    if total == most:
        return 1.0
    excess = sum(max(0, count - most) for count in counts)
    return 1.0 - excess / (total - most)


def team_score(components: Mapping[str, float], weights: Mapping[str, float]) -> float:
    return sum(weights[name] * components[name] for name in COMPONENTS)


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """The weights of every component: ``weights`` over the defaults. Raises ValueError on an unknown
    component or a negative or non-finite weight."""
    return component_weights(weights, DEFAULT_WEIGHTS)
