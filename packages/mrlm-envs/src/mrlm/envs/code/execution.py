"""Test a program against a task in one sandbox execution and judge what happened.

The sandbox runs :mod:`mrlm.envs.code._harness` with the program and the tests on its stdin. The
harness is two processes: the judge runs the tests and writes the report, and the program runs in a
process of its own, forked before the judge reads the tests, that exchanges only plain values with
the judge (see the harness's docstring). So the verdict depends only on what the program computes:
it cannot read the tests, reach the judge or write the report, and an object that claims to equal
anything stays on its side. Nothing of the program runs in this process either.
"""

from __future__ import annotations

import ast
import json
import marshal
import re
import secrets
import sys
import warnings
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from mrlm.envs.code._harness import RESULT_MARKER, compile_tests, source_stamp
from mrlm.envs.code.asserts import explained
from mrlm.envs.code.program import Program
from mrlm.envs.code.tasks import CodeTask
from mrlm.envs.sandbox import ExecutionResult, Limits, Sandbox, Status

Outcome = Literal["passed", "failed", "syntax_error", "timeout", "error", "no_code"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "syntax_error", "timeout", "error", "no_code")


@dataclass(frozen=True)
class TestResult:
    """How one test went.

    Attributes:
        passed: the test ran without raising.
        error: ``"ExceptionName: message"`` (truncated) when it failed, else None.
        timed_out: it ran past the per-test time limit.
        line: the line of the solution program where the error was raised, if it was raised there.
    """

    __test__ = False  # not a pytest class, despite the name

    passed: bool
    error: str | None = None
    timed_out: bool = False
    line: int | None = None


@dataclass(frozen=True)
class Verdict:
    """The judgement of one program.

    Attributes:
        outcome: ``"passed"`` (every test passed), ``"failed"`` (the tests ran, some failed),
            ``"syntax_error"``, ``"timeout"`` (the program or a test ran out of time), ``"error"``
            (the program crashed while loading, or ended without trustworthy results) or
            ``"no_code"`` (the reply held no code; nothing ran).
        results: one result per test, in order; empty when the tests did not run.
        total: the number of tests of the task.
        sandbox_status: the sandbox's status (``"ok"``, ``"timeout"``, ...), None when nothing ran.
        message: for outcomes other than passed/failed, one readable line saying what went wrong.
        line: the program line of a syntax error or loading error, when known.
        source_line: the text of the line with the syntax error, when known.
    """

    outcome: Outcome
    results: tuple[TestResult, ...]
    total: int
    sandbox_status: str | None = None
    message: str = ""
    line: int | None = None
    source_line: str | None = None

    @property
    def passed(self) -> int:
        return sum(result.passed for result in self.results)

    @property
    def pass_fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total

    def result_infos(self) -> list[dict[str, Any]]:
        """One ``{"passed", "error", "timed_out"}`` per test, as the envs put them in ``info``."""
        return [
            {"passed": result.passed, "error": result.error, "timed_out": result.timed_out}
            for result in self.results
        ]


@lru_cache(maxsize=1)
def harness_source() -> str:
    """The text of the harness script."""
    return resources.files("mrlm.envs.code").joinpath("_harness.py").read_text(encoding="utf-8")


#: The exit status of :func:`bootstrap_program` where the sandbox's worker holds no harness, or
#: another version of it; it also writes this line to its stdout (the result comes once its output
#: closes, before its exit status is known).
NOT_PRELOADED = 97
NOT_PRELOADED_LINE = "@@mrlm-code-not-preloaded"

_BOOTSTRAP = """import sys
harness = sys.modules.get("mrlm.envs.code._harness")
if harness is None or getattr(harness, "SOURCE_STAMP", None) != {stamp!r}:
    sys.stdout.write({line!r} + "\\n")
    sys.stdout.flush()
    raise SystemExit({status})
harness.main()
"""


@lru_cache(maxsize=1)
def bootstrap_program() -> str:
    """The program usually sent to the sandbox: it runs the harness its worker preloaded (see
    ``mrlm.envs.sandbox``), when that is this very harness. Sending the harness itself, and defining
    its classes and functions in every execution, would cost more than the rest of the execution;
    where the worker lacks it, the program exits with :data:`NOT_PRELOADED` and :func:`judge` runs
    the harness's own text instead."""
    return _BOOTSTRAP.format(
        stamp=source_stamp(harness_source()), status=NOT_PRELOADED, line=NOT_PRELOADED_LINE
    )


def judge(
    program: Program,
    task: CodeTask,
    sandbox: Sandbox,
    limits: Limits,
    *,
    step_time_limit_s: float,
    error_chars: int = 300,
) -> Verdict:
    """Run ``program`` against ``task``'s tests in ``sandbox`` (one execution) and judge it.

    Args:
        program: the solution program.
        task: the task whose tests run.
        sandbox: where to run it.
        limits: limits of the whole execution (its wall time bounds all the tests together).
        step_time_limit_s: limit of each test (and of loading the program), in seconds.
        error_chars: the longest error message kept per test.
    """
    nonce = secrets.token_hex(16)
    steps = tuple(explained(step.code) if step.counted else step.code for step in task.steps)
    payload = {
        "nonce": nonce,
        "solution": program.source,
        "entry_point": task.entry_point,
        "test_setup": task.test_setup,
        "steps": [[code, step.counted] for code, step in zip(steps, task.steps, strict=True)],
        "compiled": compiled_tests(task.test_setup, steps, task.entry_point),
        "compiled_for": sys.version,
        "step_time_limit_s": step_time_limit_s,
        "error_chars": error_chars,
    }
    stdin = json.dumps(payload)
    result = sandbox.run(
        bootstrap_program(), stdin=stdin, limits=limits, prestart=True, until_output_closed=True
    )
    if RESULT_MARKER not in result.stdout and (
        result.exit_code == NOT_PRELOADED or result.stdout.startswith(NOT_PRELOADED_LINE)
    ):
        result = sandbox.run(harness_source(), stdin=stdin, limits=limits, until_output_closed=True)
    total = len(task.tests)
    report, problem = read_report(result.stdout, nonce)
    if report is None:
        return _without_report(result, total, problem, limits)
    return _from_report(report, result, total)


#: The longest compiled tests sent (hex characters): more would not fit the pipe of a judge started
#: ahead together with the rest of its input, and it would start afresh.
MAX_COMPILED_CHARS = 1 << 18


@lru_cache(maxsize=1024)
def compiled_tests(test_setup: str, steps: tuple[str, ...], entry_point: str) -> str | None:
    """A task's test set-up and steps compiled here, marshalled, in hex; None when one does not
    compile (the judge then reports it) or the result is over :data:`MAX_COMPILED_CHARS`. The
    judge loads these where its interpreter is this one (``compiled_for``) rather than compiling
    the tests in every execution, which costs it about a millisecond of a fresh process's time; a
    task is judged many times, so the cache pays. Compiled as the judge would, by the harness's
    :func:`~mrlm.envs.code._harness.compile_tests` (asserts kept under ``python -O`` too)."""
    try:
        codes = compile_tests(test_setup, steps, entry_point)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError):
        return None
    text = marshal.dumps(codes).hex()
    return text if len(text) <= MAX_COMPILED_CHARS else None


def read_report(stdout: str, nonce: str) -> tuple[dict[str, Any] | None, str]:
    """The harness's report from ``stdout``, or None and why not.

    There must be exactly one result line, and it must carry ``nonce``: a program that prints a
    result line of its own, right or wrong, gets no report.
    """
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARKER)]
    if not lines:
        return None, ""
    if len(lines) > 1:
        return None, "the program wrote a result line of its own"
    _, _, rest = lines[0].partition(" ")
    given, _, text = rest.partition(" ")
    if not secrets.compare_digest(given.encode(), nonce.encode()):  # str would refuse non-ASCII
        return None, "the program wrote a result line of its own"
    try:
        report = ast.literal_eval(text)  # written by the harness (the nonce says so): plain literals
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None, "the test harness wrote an unreadable report"
    if not isinstance(report, dict) or report.get("stage") not in ("syntax", "load", "tests", "harness"):
        return None, "the test harness wrote an unreadable report"
    return report, ""


def _without_report(result: ExecutionResult, total: int, problem: str, limits: Limits) -> Verdict:
    status = result.status.value
    if problem:
        return Verdict("error", (), total, status, problem)
    if result.status is Status.TIMEOUT:
        message = f"the program did not finish within {limits.wall_time_s:g} s"
        return Verdict("timeout", (), total, status, message)
    if result.status is Status.SANDBOX_ERROR:
        warnings.warn(
            f"the sandbox failed, so a reply was not judged: {result.message}", RuntimeWarning, stacklevel=3
        )
        return Verdict("error", (), total, status, f"the sandbox failed: {result.message}")
    if result.status in (Status.MEMORY, Status.OUTPUT_LIMIT, Status.KILLED):
        return Verdict("error", (), total, status, result.message)
    return Verdict("error", (), total, status, "the program ended before its tests reported")


def _from_report(report: dict[str, Any], result: ExecutionResult, total: int) -> Verdict:
    status = result.status.value
    stage = report["stage"]
    if stage == "syntax":
        message = f"SyntaxError: {_str(report.get('message')) or 'invalid syntax'}"
        return Verdict(
            "syntax_error", (), total, status, message, _int(report.get("line")), _str(report.get("text"))
        )
    if stage == "load":
        outcome: Outcome = "timeout" if report.get("timed_out") is True else "error"
        return Verdict(
            outcome, (), total, status, _str(report.get("error")) or "error", _int(report.get("line"))
        )
    if stage == "harness":
        return Verdict("error", (), total, status, f"the test harness failed: {_str(report.get('error'))}")
    raw = report.get("results")
    if not isinstance(raw, list) or len(raw) != total:
        return Verdict("error", (), total, status, "the test harness wrote an unreadable report")
    results = tuple(_test_result(entry) for entry in raw)
    if any(result.timed_out for result in results):
        return Verdict("timeout", results, total, status, "a test ran out of time")
    outcome = "passed" if all(result.passed for result in results) else "failed"
    return Verdict(outcome, results, total, status)


def _test_result(entry: object) -> TestResult:
    if not isinstance(entry, list) or len(entry) != 4:
        return TestResult(False, "the test harness wrote an unreadable result")
    passed, error, timed_out, line = entry
    return TestResult(passed is True, _str(error), timed_out is True, _int(line))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    """A text of the report, lone surrogates replaced: the program's own messages (an exception it
    raised, a line it printed) may hold them, and they cannot be encoded as UTF-8, so shown to a
    model, printed or sent over the wire they would fail far from their source."""
    return _LONE_SURROGATE.sub("\ufffd", value) if isinstance(value, str) else None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
