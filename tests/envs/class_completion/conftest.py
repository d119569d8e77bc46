"""Fixtures of the ClassCompletion tests: one sandbox for all, and envs with the limits below."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.envs.class_completion.env import ClassCompletionAECEnv, ClassCompletionEnv
from mrlm.envs.sandbox import Sandbox

#: Per-test time ample even on a loaded machine, so that results never depend on timing; the
#: hostile tests shorten it.
LIMITS: dict[str, Any] = {"time_limit_s": 10.0, "test_time_limit_s": 2.0}


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return Sandbox.shared()


@pytest.fixture
def make_env(sandbox: Sandbox) -> Any:
    """``make_env(**kwargs)``: a parallel ClassCompletionEnv on the shared sandbox with LIMITS."""

    def make(**kwargs: Any) -> ClassCompletionEnv:
        return ClassCompletionEnv(sandbox=sandbox, **{**LIMITS, **kwargs})

    return make


@pytest.fixture
def make_aec(sandbox: Sandbox) -> Any:
    """``make_aec(**kwargs)``: a ClassCompletionAECEnv on the shared sandbox with LIMITS."""

    def make(**kwargs: Any) -> ClassCompletionAECEnv:
        return ClassCompletionAECEnv(sandbox=sandbox, **{**LIMITS, **kwargs})

    return make
