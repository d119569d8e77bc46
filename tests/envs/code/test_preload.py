"""The sandbox's workers preload the test harness; a worker without it still judges, by the harness's text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrlm.envs.code import build_program, builtin_tasks, judge
from mrlm.envs.code.execution import NOT_PRELOADED, NOT_PRELOADED_LINE, bootstrap_program
from mrlm.envs.sandbox import Limits, Sandbox, pool

LIMITS = Limits(wall_time_s=20.0, cpu_time_s=20.0)
TASK = builtin_tasks()[0]


@pytest.fixture
def bare_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A sandbox whose workers preload only the standard library."""
    monkeypatch.setattr(pool, "PRELOAD", tuple(name for name in pool.PRELOAD if not name.startswith("mrlm.")))
    sandbox = Sandbox(workers=1)
    yield sandbox
    sandbox.close()


def test_the_shared_sandbox_runs_the_preloaded_harness(sandbox: Sandbox) -> None:
    probe = sandbox.run("import sys\nprint('mrlm.envs.code._harness' in sys.modules)\n")
    assert probe.stdout.strip() == "True"
    assert len(bootstrap_program()) < 1000  # the program sent with every reply is the bootstrap only


def test_a_worker_without_the_harness_says_so_and_is_judged_all_the_same(bare_sandbox: Sandbox) -> None:
    assert bare_sandbox.run(bootstrap_program(), stdin="{}").exit_code == NOT_PRELOADED
    # Answered at its output's end, its exit status may not be known yet; its stdout says it.
    early = bare_sandbox.run(bootstrap_program(), stdin="{}", until_output_closed=True)
    assert early.stdout.startswith(NOT_PRELOADED_LINE), early
    right = build_program(TASK, TASK.canonical_solution or "")
    verdict = judge(right, TASK, bare_sandbox, LIMITS, step_time_limit_s=5.0)
    assert (verdict.outcome, verdict.passed) == ("passed", len(TASK.tests))
    wrong = build_program(TASK, f"def {TASK.entry_point}(*args):\n    return None\n")
    verdict = judge(wrong, TASK, bare_sandbox, LIMITS, step_time_limit_s=5.0)
    assert (verdict.outcome, verdict.passed) == ("failed", 0)
