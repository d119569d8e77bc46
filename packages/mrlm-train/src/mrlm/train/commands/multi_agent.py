"""``mrlm-train magrpo | mareinforce | marloo | maremax | ippo``: train several agents together."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mrlm.train.algorithms import ippo, magrpo, mareinforce, maremax, marloo
from mrlm.train.algorithms.multi_agent import MultiAgentConfig

#: Each variant's config class and its ``train``.
TRAINERS: dict[type[MultiAgentConfig], Callable[..., Path]] = {
    magrpo.MAGRPOConfig: magrpo.train,
    mareinforce.MAREINFORCEConfig: mareinforce.train,
    marloo.MARLOOConfig: marloo.train,
    maremax.MAReMaxConfig: maremax.train,
    ippo.IPPOConfig: ippo.train,
}


def run_multi_agent(config: Any) -> int:
    """Train with the variant ``config`` belongs to, print where the final models are, return 0."""
    print(f"final models: {TRAINERS[type(config)](config)}")
    return 0
