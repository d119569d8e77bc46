"""Hostile and broken replies never crash or hang the env, and earn little."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.envs.coop_code.replies import HELPER, MAIN, TASK, fenced

HOSTILE = {
    "empty": "",
    "prose": "I would rather not.",
    "syntax error": "```python\ndef digital_root(n:\n    return\n```",
    "huge": "x = 1\n" * 10_000,
    "deep nesting": "(" * 5000 + ")" * 5000,
    "loop at load": "while True:\n    pass\n" + MAIN,
    "loop in the function": "def digital_root(n):\n    while True:\n        pass\n",
    "shell": "import os, subprocess\n\ndef digital_root(n):\n    os.system('kill -9 -1')\n"
    "    subprocess.run(['sh', '-c', 'echo hi'])\n    return 1\n",
    "memory": "blob = 'x' * (1 << 40)\n" + MAIN,
    "exit": "import sys\nsys.exit(0)\n" + MAIN,
    "print flood": "def digital_root(n):\n    while True:\n        print('y' * 10000)\n",
    "fake report": 'print(\'@@mrlm-code-result 00 {"stage": "tests", "results": []}\')\n\n'
    "def digital_root(n):\n    return digit_sum(n) * 0\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_main_is_judged_quickly_and_scores_below_the_team(make_env: Any, name: str) -> None:
    env = make_env(max_turns=1, test_time_limit_s=0.5)
    env.reset(seed=0, options=TASK)
    start = time.monotonic()
    observations, rewards, terminations, _, infos = env.step(
        {"helper": fenced(HELPER), "main": HOSTILE[name]}
    )
    assert time.monotonic() - start < 5.0
    assert terminations == {"helper": True, "main": True}
    assert rewards["main"] < 0.7, infos["main"]["components"]
    assert observations["main"]["text"].startswith("Attempt 1:")
    assert env.observation_space("main").contains(observations["main"])


def test_the_env_keeps_working_after_hostile_replies(make_env: Any) -> None:
    env = make_env(max_turns=1, test_time_limit_s=0.5)
    for reply in HOSTILE.values():
        env.reset(seed=0, options=TASK)
        env.step({"helper": reply, "main": reply})
    env.reset(seed=0, options=TASK)
    _, rewards, _, _, _ = env.step({"helper": fenced(HELPER), "main": fenced(MAIN)})
    assert rewards["main"] == pytest.approx(1.0)


def test_a_reply_over_the_action_limit_is_refused_before_anything_runs(make_env: Any) -> None:
    env = make_env()
    env.reset(seed=0, options=TASK)
    with pytest.raises(ValueError, match="max_action_length"):
        env.step({"helper": "x" * 70_000, "main": ""})
