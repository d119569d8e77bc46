"""The examples in the documentation of the ClassCompletion package run as written."""

from __future__ import annotations

import doctest
import importlib
import types

import pytest

import mrlm.envs.class_completion

# The package's ``env`` is PettingZoo's factory, which hides the submodule of the same name.
ENV_MODULE = importlib.import_module("mrlm.envs.class_completion.env")


@pytest.mark.parametrize("module", [mrlm.envs.class_completion, ENV_MODULE], ids=lambda m: m.__name__)
def test_doctests(module: types.ModuleType) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0
