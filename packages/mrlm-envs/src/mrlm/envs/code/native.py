"""MRLM's own records, the format of the built-in problems: ``task_id``, ``prompt``, ``entry_point``,
``tests`` and optionally ``canonical_solution``.

- ``prompt``: the code the agent is shown, the entry point's signature and docstring at column 0,
  after any imports and helpers the task gives (they are loaded into the tests' namespace).
- ``tests``: a list of Python statement blocks, each one test: it fails when it raises (a failed
  ``assert``, or an explicit ``raise AssertionError`` after a call that should have raised). Tests
  call the entry point by name.
- ``canonical_solution``: the code that completes ``prompt`` (its body), as in HumanEval.

Unlike HumanEval's single ``check`` function, nothing is split or guessed: each item of ``tests`` is
one counted test. ``mrlm/envs/code/data/problems.jsonl`` in the package holds the built-in problems
in this format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mrlm.envs.code.mbpp import optional_text
from mrlm.envs.code.tasks import CodeTask, TestStep, code_before_definition, definition_pattern

FIELDS = ("task_id", "prompt", "entry_point", "tests")


def native_task(record: Mapping[str, Any], where: str) -> CodeTask:
    """A task from an MRLM record; ``where`` names the record in error messages."""
    prompt = _text(record, "prompt", where)
    entry_point = record["entry_point"]
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise ValueError(f"{where}: entry_point {entry_point!r} is not a Python name")
    if not definition_pattern(entry_point).search(prompt):
        raise ValueError(f"{where}: the prompt does not define {entry_point} at column 0")
    completion = optional_text(record, "canonical_solution", where)  # "" when there is none
    return CodeTask(
        task_id=str(record["task_id"]),
        entry_point=entry_point,
        description="",
        prompt_code=prompt,
        test_setup=code_before_definition(prompt, entry_point),
        steps=counted_steps(record["tests"], where),
        canonical_solution=prompt + completion if record.get("canonical_solution") is not None else None,
        source="mrlm",
    )


def counted_steps(tests: object, where: str) -> tuple[TestStep, ...]:
    """One counted step per test of a non-empty list of statement blocks; ValueError naming ``where``
    when one is not a string, is blank or does not compile."""
    if isinstance(tests, str) or not isinstance(tests, (list, tuple)) or not tests:
        raise ValueError(f"{where}: field 'tests' must be a non-empty list of strings")
    steps = []
    for number, test in enumerate(tests):
        if not isinstance(test, str) or not test.strip():
            raise ValueError(f"{where}: test {number} must be a non-empty string")
        code = test.replace("\r\n", "\n")
        try:
            compile(code, "<test>", "exec")  # task data, never executed here
        except (SyntaxError, ValueError) as error:
            raise ValueError(f"{where}: test {number} does not compile: {error}") from None
        steps.append(TestStep(code))
    return tuple(steps)


def _text(record: Mapping[str, Any], name: str, where: str) -> str:
    value = record[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty string, got {value!r:.60}")
    return value.replace("\r\n", "\n")
