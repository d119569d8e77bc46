"""Fixtures of the code env tests: one sandbox for all, and envs with short limits on it."""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.envs.code import CodeEnv
from mrlm.envs.sandbox import Sandbox
from tests.envs.code.replies import FAST


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return Sandbox.shared()


@pytest.fixture
def make_env(sandbox: Sandbox) -> Any:
    """``make_env(**kwargs)``: a CodeEnv on the shared sandbox with short limits."""

    def make(**kwargs: Any) -> CodeEnv:
        return CodeEnv(sandbox=sandbox, **{**FAST, **kwargs})

    return make
