"""Hostile and broken replies never crash or hang the env, and earn little."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.envs.class_completion.replies import DEAL, SEED, TASK, methods

HOSTILE = {
    "empty": "",
    "prose": "No.",
    "syntax error": "```python\ndef remove_item(self, name:\n```",
    "huge": "def remove_item(self, name, quantity):\n" + "    x = 1\n" * 6000,
    "loop": "def remove_item(self, name, quantity):\n    while True:\n        pass\n",
    "loop at import": "import itertools\nfor _ in itertools.count():\n    pass\n",
    "shell": "def remove_item(self, name, quantity):\n    import os\n    os.system('kill -9 -1')\n    return True\n",
    "constructor": "def __init__(self):\n    self.stock = {'free': 1}\n",
    "exit": "def most_stocked(self):\n    raise SystemExit(0)\n",
    "bad indentation": "def remove_item(self, name, quantity):\n\treturn True\n        pass\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_agent_is_judged_quickly_and_scores_below_a_balanced_team(make_env: Any, name: str) -> None:
    env = make_env(max_turns=1, test_time_limit_s=0.5)
    env.reset(seed=SEED, options=TASK)
    start = time.monotonic()
    observations, rewards, terminations, _, infos = env.step(
        {"agent_0": methods(DEAL["agent_0"]), "agent_1": HOSTILE[name]}
    )
    assert time.monotonic() - start < 5.0
    assert terminations == {"agent_0": True, "agent_1": True}
    assert rewards["agent_1"] < 0.9 and rewards["agent_0"] < 0.9, infos["agent_0"]["components"]
    assert "class Inventory" in infos["agent_0"]["program"]
    assert env.observation_space("agent_1").contains(observations["agent_1"])


def test_the_constructor_stays_as_given(make_env: Any) -> None:
    env = make_env(max_turns=1, test_time_limit_s=0.5)
    env.reset(seed=SEED, options=TASK)
    _, _, _, _, infos = env.step({"agent_0": methods(DEAL["agent_0"]), "agent_1": HOSTILE["constructor"]})
    assert "'free'" not in infos["agent_1"]["program"]
    assert infos["agent_1"]["overwrites"] == [] and infos["agent_1"]["idle"] is True
