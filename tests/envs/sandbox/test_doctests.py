"""The examples in the sandbox package's documentation run as written."""

from __future__ import annotations

import doctest

import mrlm.envs.sandbox


def test_package_doctests() -> None:
    outcome = doctest.testmod(mrlm.envs.sandbox, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert outcome.attempted > 0
    assert outcome.failed == 0
