"""Which tests an episode's feedback has quoted, so that passing them by their quoted answers pays nothing.

A failing test quoted after an attempt shows the agent an input and the value expected for it: a
later attempt could return that value for that input and pass the test without solving anything,
once per quoted test. So, in Code-v0, CoopCode-v0 and ClassCompletion-v0:

- until an attempt passes every test, its pass fraction (its score's test part) counts a quoted test
  as failed: ``passed unquoted tests / all tests``. Returning quoted answers adds nothing, and the
  same code sent again never scores more (dropping quoted tests from the count instead would raise
  it: each quote would take a failure away);
- feedback quotes a failing test it has quoted before where there is one, else a new one only while
  another test stays unquoted, else says only that a test not shown failed (not the test, its
  message, which holds the expected value, nor the exception's name, which the code could choose
  by the input);

so passing every test, which pays in full (``all_passed``, the bonus, the end of an episode), takes
at least one test the agent has never read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mrlm.envs.code.execution import Verdict


class TestDisclosure:
    """The tests quoted so far in one episode (by index); a new episode starts a new one."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self) -> None:
        self.quoted: set[int] = set()

    def scored_fraction(self, verdict: Verdict) -> float:
        """1 when ``verdict`` passed every test, else the share of all tests that it passed among
        those not quoted so far (0 when none ran).

        Call it before the attempt's feedback, which may quote another test."""
        if verdict.all_passed:
            return 1.0
        if not verdict.results or not verdict.total:
            return 0.0
        passed = [index for index, result in enumerate(verdict.results) if result.passed]
        return sum(index not in self.quoted for index in passed) / verdict.total

    def failing_test_to_quote(self, verdict: Verdict) -> int | None:
        """The failing test the feedback may quote, marked as quoted; None when only unquoted tests
        fail and quoting one would leave none unquoted (or nothing failed)."""
        failing = [index for index, result in enumerate(verdict.results) if not result.passed]
        for index in failing:
            if index in self.quoted:
                return index
        if failing and verdict.total - len(self.quoted) >= 2:
            self.quoted.add(failing[0])
            return failing[0]
        return None


#: What the feedback says of a failing test it does not quote.
UNQUOTED_FAILURE = "A test you have not seen failed."
