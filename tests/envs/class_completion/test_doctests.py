"""The examples in the documentation of the ClassCompletion package run as written."""

from __future__ import annotations

import doctest
import types

import pytest

import mrlm.envs.class_completion
import mrlm.envs.class_completion.env


@pytest.mark.parametrize(
    "module", [mrlm.envs.class_completion, mrlm.envs.class_completion.env], ids=lambda m: m.__name__
)
def test_doctests(module: types.ModuleType) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0 and outcome.failed == 0
