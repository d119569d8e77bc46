"""The examples in the documentation of the CoopCode package run as written."""

from __future__ import annotations

import doctest
import importlib
import types

import pytest

import mrlm.envs.coop_code

# The package's ``env`` is PettingZoo's factory, which hides the submodule of the same name.
ENV_MODULE = importlib.import_module("mrlm.envs.coop_code.env")


@pytest.mark.parametrize("module", [mrlm.envs.coop_code, ENV_MODULE], ids=lambda m: m.__name__)
def test_doctests(module: types.ModuleType) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0
