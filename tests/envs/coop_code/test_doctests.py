"""The examples in the documentation of the CoopCode package run as written."""

from __future__ import annotations

import doctest
import types

import pytest

import mrlm.envs.coop_code
import mrlm.envs.coop_code.env


@pytest.mark.parametrize("module", [mrlm.envs.coop_code, mrlm.envs.coop_code.env], ids=lambda m: m.__name__)
def test_doctests(module: types.ModuleType) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0
