"""Replies and limits shared by the code env tests."""

from __future__ import annotations

from typing import Any

#: Short limits keep the tests fast; a whole execution still has ample time.
FAST: dict[str, Any] = {"time_limit_s": 5.0, "test_time_limit_s": 1.0}


def fenced(code: str) -> str:
    """A reply holding ``code`` in a python block, as a model would write it."""
    return f"Here is my solution.\n\n```python\n{code}\n```\n"


def wrong_solution(entry_point: str, is_class: bool) -> str:
    """A solution of the right name that does nothing useful."""
    if is_class:
        return f"class {entry_point}:\n    pass\n"
    return f"def {entry_point}(*args, **kwargs):\n    return None\n"
