"""Number-valued env arguments (rewards, penalties, time and memory limits) are refused by name.

Each case below was accepted (a nan or infinite reward, which poisons every return computed from
it) or refused with a message that named no argument ("could not convert string to float",
"Limits.memory_bytes must be positive", "time_limit_s and test_time_limit_s must be positive").
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import mrlm.envs
from mrlm.envs.core.numbers import finite_float


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("mrlm/Math-v0", {"correct_reward": "x"}, "correct_reward must be a number, got 'x'"),
        ("mrlm/Math-v0", {"format_reward": float("nan")}, "format_reward must be finite, got nan"),
        ("mrlm/Math-v0", {"verify_timeout": "soon"}, "verify_timeout must be a number, got 'soon'"),
        ("mrlm/ToolUse-v0", {"tool_bonus": float("inf")}, "tool_bonus must be finite, got inf"),
        ("mrlm/Code-v0", {"all_pass_bonus": True}, "all_pass_bonus must be a number, got True"),
        (
            "mrlm/Code-v0",
            {"time_limit_s": -1},
            "time_limit_s must be a number of seconds > 0 and at most 86400, got -1",
        ),
        (
            "mrlm/CoopCode-v0",
            {"test_time_limit_s": float("inf")},
            "test_time_limit_s must be a number of seconds > 0 and at most 86400, got inf",
        ),
        # Beyond what the sandbox can apply: refused when the env is made, not at its first step.
        (
            "mrlm/Code-v0",
            {"time_limit_s": 1e300},
            "time_limit_s must be a number of seconds > 0 and at most 86400, got 1e+300",
        ),
        (
            "mrlm/Code-v0",
            {"memory_limit_mb": 0},
            "memory_limit_mb must be an int from 1 to 1073741824, got 0",
        ),
        (
            "mrlm/ClassCompletion-v0",
            {"memory_limit_mb": 2**60},
            f"memory_limit_mb must be an int from 1 to 1073741824, got {2**60}",
        ),
        ("mrlm/ClassCompletion-v0", {"idle_penalty": float("nan")}, "idle_penalty must be finite, got nan"),
        ("mrlm/ClassCompletion-v0", {"overwrite_penalty": -1}, "overwrite_penalty must be >= 0, got -1.0"),
    ],
)
def test_a_number_argument_out_of_range_is_refused_by_name(
    env_id: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        mrlm.envs.make(env_id, **kwargs)


def test_finite_float_reads_numbers_and_names_the_rest() -> None:
    assert finite_float("reward", "0.5") == 0.5
    assert finite_float("reward", 2) == 2.0
    for value, shown in ((None, "None"), (False, "False"), (float("-inf"), "-inf")):
        with pytest.raises(ValueError, match=f"^reward must be (a number|finite), got {shown}$"):
            finite_float("reward", value)
