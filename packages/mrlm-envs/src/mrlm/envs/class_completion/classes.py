"""The built-in classes of ``mrlm/ClassCompletion-v0``, written for this project as ClassEval records.

Five small classes of four methods each, with a ``unittest`` class per method and one that uses the
methods together, as ClassEval lays its tasks out; the tests of this package prove that the reference
methods pass and that the stubs do not.

The records ship as ``data/classes.jsonl`` in this package and load through
:func:`mrlm.envs.class_completion.load_class_tasks`, the same code as ClassEval's own: the file is an
example of the format.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from mrlm.envs._package_data import data_file
from mrlm.envs.class_completion.classeval import load_class_tasks
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.core.records import read_jsonl

_PACKAGE, _FILE = "mrlm.envs.class_completion", "classes.jsonl"


def builtin_records() -> list[dict[str, Any]]:
    """The built-in classes as ClassEval records (fresh dicts), ids ``mrlm-class/0``, ..."""
    with data_file(_PACKAGE, _FILE) as path:
        return read_jsonl(path)


@cache
def builtin_classes() -> tuple[ClassTask, ...]:
    """The built-in classes as tasks."""
    with data_file(_PACKAGE, _FILE) as path:
        tasks = load_class_tasks(path)
    return tuple(
        replace(task, source="builtin", tests=replace(task.tests, source="builtin")) for task in tasks
    )
