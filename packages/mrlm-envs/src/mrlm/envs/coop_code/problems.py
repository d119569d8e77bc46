"""The built-in problems of ``mrlm/CoopCode-v0``, written for this project.

Each problem splits a small program into functions that call one another: helpers, and a main
function (last) that the tests call. Nine have two parts and three have three, for teams of that
size. Every part has a reference body; the tests of this package prove that the reference parts pass
and that the main part fails without its helpers.

The problems ship as ``data/problems.jsonl`` in this package, one parts record a line (see
:mod:`mrlm.envs.coop_code.records`), and load through :func:`mrlm.envs.coop_code.load_coop_tasks` as
users' records do: the file is an example of the format.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from mrlm.envs._package_data import data_file
from mrlm.envs.coop_code.records import load_coop_tasks
from mrlm.envs.coop_code.tasks import CoopTask


@cache
def builtin_problems() -> tuple[CoopTask, ...]:
    """The built-in problems as tasks, with ids ``mrlm-coop/0``, ``mrlm-coop/1``, ..."""
    with data_file("mrlm.envs.coop_code", "problems.jsonl") as path:
        tasks = load_coop_tasks(path)
    return tuple(
        replace(task, source="builtin", tests=replace(task.tests, source="builtin")) for task in tasks
    )
