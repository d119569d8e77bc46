"""What a coding task is, whatever format it came from: a prompt, an entry point and separate tests."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TestStep:
    """One piece of test code, run in the tests' namespace after the solution is loaded.

    Attributes:
        code: Python statements; the step fails when they raise (a failed ``assert`` included).
        counted: True for a test (it counts towards the pass fraction), False for set-up the later
            tests rely on (when set-up fails, the tests after it are not run and count as failed).
    """

    __test__ = False  # not a pytest class, despite the name

    code: str
    counted: bool = True


@dataclass(frozen=True)
class CodeTask:
    """A programming task in the form the env runs, whatever format it was loaded from.

    Attributes:
        task_id: unique name of the task.
        entry_point: the function (or class) the tests call.
        description: prose shown to the agent before ``prompt_code`` ("" when the code says it all).
        prompt_code: code shown to the agent: imports, helpers and the entry point's signature and
            docstring. A reply that does not define the entry point is taken as its completion and
            appended to it. "" when the task is prose only (MBPP).
        test_setup: code run once in the tests' namespace before the steps: imports, helpers.
        steps: the test steps, in order; at least one is counted.
        canonical_solution: a complete program known to pass every test, when the source has one.
        source: where the task came from: ``"builtin"``, ``"humaneval"``, ``"mbpp"``,
            ``"mbpp-sanitized"`` or ``"mrlm"`` (records in the built-ins' format).
    """

    task_id: str
    entry_point: str
    description: str
    prompt_code: str
    test_setup: str
    steps: tuple[TestStep, ...]
    canonical_solution: str | None = None
    source: str = "builtin"

    def __post_init__(self) -> None:
        if not self.entry_point.isidentifier():
            raise ValueError(f"task {self.task_id!r}: entry point {self.entry_point!r} is not a Python name")
        if not any(step.counted for step in self.steps):
            raise ValueError(f"task {self.task_id!r} has no tests")

    @property
    def tests(self) -> tuple[str, ...]:
        """The code of the counted steps, in order."""
        return tuple(step.code for step in self.steps if step.counted)

    @property
    def context(self) -> str:
        """The part of ``prompt_code`` before the entry point's definition: imports and helpers.

        It precedes a reply that defines the entry point itself, and is loaded into the tests'
        namespace, so helpers the tests call come from the task rather than from the reply.
        """
        return code_before_definition(self.prompt_code, self.entry_point)


def code_before_definition(code: str, name: str) -> str:
    """The lines of ``code`` before the top-level definition of ``name`` and its decorators ("" if
    there is no such definition)."""
    match = definition_pattern(name).search(code)
    if match is None:
        return ""
    lines = code[: match.start()].splitlines(keepends=True)
    while lines and lines[-1].lstrip().startswith("@"):
        lines.pop()
    return "".join(lines)


def definition_pattern(name: str) -> re.Pattern[str]:
    """A pattern that finds a top-level ``def``/``async def``/``class`` of ``name`` (at column 0)."""
    return re.compile(rf"^(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b", re.MULTILINE)
