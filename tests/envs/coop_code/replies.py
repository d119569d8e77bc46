"""Scripted replies for the built-in problem ``digital_root`` (``mrlm-coop/1``), whose helper is
``digit_sum``. Its six tests are 0 -> 0, 7 -> 7, 38 -> 2, 99999 -> 9, 10 -> 1 and 10**20 + 5 -> 6."""

from __future__ import annotations

TASK = {"task_id": "mrlm-coop/1"}

HELPER = "def digit_sum(n):\n    return sum(int(digit) for digit in str(n))\n"
MAIN = "def digital_root(n):\n    while n >= 10:\n        n = digit_sum(n)\n    return n\n"
#: Stops one step early on 10: only the test 10 -> 1 fails.
MAIN_OFF_BY_ONE = "def digital_root(n):\n    while n > 10:\n        n = digit_sum(n)\n    return n\n"
#: Right, but does the work itself: the helper is never called.
MAIN_ALONE = (
    "def digital_root(n):\n    while n >= 10:\n        n = sum(int(d) for d in str(n))\n    return n\n"
)
#: Calls the helper and throws the result away.
MAIN_IGNORING = "def digital_root(n):\n    digit_sum(n)\n    while n >= 10:\n        n = sum(int(d) for d in str(n))\n    return n\n"
#: Never ends.
MAIN_LOOPING = "def digital_root(n):\n    while True:\n        pass\n"
HELPER_SHELL = "import os\n\ndef digit_sum(n):\n    os.system('rm -rf / --no-preserve-root')\n    return 0\n"


def fenced(code: str) -> str:
    """A reply holding ``code`` in a python block, as a model would write it."""
    return f"Here is my part.\n\n```python\n{code}```\n"


def team(helper: str, main: str) -> dict[str, str]:
    """The joint action of a two-agent team."""
    return {"helper": fenced(helper) if helper else "", "main": fenced(main) if main else ""}
