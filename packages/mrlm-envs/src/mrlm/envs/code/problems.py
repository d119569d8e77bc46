"""The built-in problems of ``mrlm/Code-v0``, written for this project.

Each problem is a signature with a docstring (what the agent sees), a reference body that completes it
(the tests prove it passes), and several independent tests with edge cases. A test is a statement
block that raises when the solution is wrong; it calls the entry point by name.

The problems ship as ``data/problems.jsonl`` in this package, one record a line in the MRLM format
(:mod:`mrlm.envs.code.native`), and load through :func:`mrlm.envs.code.load_tasks` as users' records
do: the file is an example of the format.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from mrlm.envs._package_data import data_file
from mrlm.envs.code.records import load_tasks
from mrlm.envs.code.tasks import CodeTask


@dataclass(frozen=True)
class BuiltinProblem:
    """One built-in problem; ``prompt + solution`` is a complete, correct program."""

    entry_point: str
    prompt: str
    solution: str
    tests: tuple[str, ...]


#: The built-in problems (read from the package data on first use).
PROBLEMS: tuple[BuiltinProblem, ...]


@cache
def builtin_tasks() -> tuple[CodeTask, ...]:
    """The built-in problems as tasks, with ids ``mrlm-code/0``, ``mrlm-code/1``, ..."""
    with data_file("mrlm.envs.code", "problems.jsonl") as path:
        return tuple(replace(task, source="builtin") for task in load_tasks(path))


def __getattr__(name: str) -> object:
    """``PROBLEMS``, built from the tasks the first time it is asked for (then a plain global)."""
    if name != "PROBLEMS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    problems = tuple(
        BuiltinProblem(
            task.entry_point,
            task.prompt_code,
            (task.canonical_solution or "")[len(task.prompt_code) :],
            task.tests,
        )
        for task in builtin_tasks()
    )
    globals()["PROBLEMS"] = problems
    return problems
