"""Which tests an episode's feedback has quoted, so that every attempt is scored on tests it has not read.

A failing test quoted after an attempt shows the agent an input and the value expected for it: a
later attempt could return that value for that input and pass the test without solving anything,
once per quoted test. So, in Code-v0, CoopCode-v0 and ClassCompletion-v0:

- an attempt's pass fraction (its score's test part) counts only the tests that no earlier feedback
  of the episode quoted;
- feedback quotes a failing test it has quoted before where there is one, else a new one only while
  another test stays unquoted, else says that an unquoted test failed and with which exception, not
  the test nor its message (which holds the expected value);

so every score rests on at least one test the agent has never read, and returning quoted answers
earns nothing. Passing every test (``all_passed``, the bonus, the end of an episode) still takes all
of them, quoted or not.
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
        """The fraction of the tests not quoted so far that ``verdict`` passed (0 when none ran).

        Call it before the attempt's feedback, which may quote another test."""
        unquoted = [index for index in range(verdict.total) if index not in self.quoted]
        if not verdict.results or not unquoted:
            return 0.0
        results = verdict.results
        return sum(results[index].passed for index in unquoted if index < len(results)) / len(unquoted)

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


def unquoted_failure(error: str | None) -> str:
    """What the feedback says of a failing test it does not quote: the exception's name only."""
    name = (error or "").split(":", 1)[0].strip()
    kind = name if name.isidentifier() else "a failure"
    return f"A test you have not seen failed ({kind})."
