"""The examples in the writing package's docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["env", "metrics", "records"]


@pytest.mark.filterwarnings("ignore:We recommend agents to be named:UserWarning")
@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name: str) -> None:
    module = importlib.import_module(f"mrlm.envs.writing.{name}")
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0
    assert outcome.failed == 0
