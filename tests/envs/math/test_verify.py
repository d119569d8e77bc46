"""Answer equivalence: exact for plain values, math-verify (in bounded worker processes) for the rest."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrlm.envs.math import VerifierPool, answers_match, check_answer
from mrlm.envs.math import verify as verify_module
from mrlm.envs.math import workers as workers_module
from mrlm.envs.math.workers import WorkerVerdict

PATHOLOGICAL = "9^{9^{9^{9}}}"  # sympy tries to build a number of ~370 million digits


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("0.5", "1/2"),
        ("\\frac{1}{2}", "1/2"),
        ("\\frac12", "0.5"),
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("1,000", "1000"),
        ("1000", "1,000"),
        ("$1,000", "1000"),
        ("x = -4", "-4"),
        ("12 apples", "12"),
        ("x < 3", "(-\\infty, 3)"),
        ("(-inf, 3)", "(-\\infty, 3)"),
        ("[2, oo)", "[2, \\infty)"),
        ("x \\geq 2", "[2, \\infty)"),
        ("-4 < x <= 7/2", "(-4, 7/2]"),
        ("x = 2, y = 3", "(2, 3)"),
        ("(2,3)", "(2, 3)"),
        ("\\text{(C)}", "\\text{(C)}"),
    ],
)
def test_plain_equivalences_are_decided_in_process(predicted: str, gold: str) -> None:
    verdict = check_answer(predicted, gold)
    assert verdict.correct and verdict.method in ("exact", "text"), verdict


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("0.333", "1/3"),
        ("0.3333333", "1/3"),  # exact: no float rounding makes a wrong answer pass
        ("2", "-2"),
        ("(3, 2)", "(2, 3)"),
        ("(2, 3)", "2"),
        ("(2, \\infty)", "[2, \\infty)"),
        ("x \\le 3", "(-\\infty, 3)"),
        ("x > 3", "(-\\infty, 3)"),
        ("5", "(-\\infty, 5)"),
    ],
)
def test_plain_non_equivalences(predicted: str, gold: str) -> None:
    verdict = check_answer(predicted, gold)
    assert not verdict.correct and verdict.method == "exact", verdict


def test_percent_is_read_as_configured() -> None:
    assert answers_match("50%", "0.5", percent_as_fraction=True)
    assert not answers_match("50%", "50", percent_as_fraction=True)
    assert answers_match("50\\%", "\\frac{1}{2}", percent_as_fraction=True)
    assert not answers_match("50%", "0.5", percent_as_fraction=False)
    assert answers_match("50%", "50", percent_as_fraction=False)
    assert verify_module._prepare("50\\% of x", True) == "\\frac{50}{100} of x"
    assert verify_module._prepare("50\\%", False) == "50"


def test_symbolic_equivalences_go_to_math_verify() -> None:
    cases = [
        ("(x+1)^2", "x^2+2x+1", True),
        ("x^2+2x+1", "(x+1)^2", True),
        ("(x+2)^2", "x^2+2x+1", False),
        ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", True),
        ("\\pi/2", "\\frac{\\pi}{2}", True),
        ("2x", "2", False),
        ("\\frac{", "1/2", False),  # unparseable: simply not equal
    ]
    for predicted, gold, same in cases:
        verdict = check_answer(predicted, gold)
        assert (verdict.correct, verdict.method, verdict.timed_out) == (same, "math_verify", False), (
            predicted,
            gold,
            verdict,
        )


def test_nothing_or_too_much_is_not_an_answer() -> None:
    assert check_answer(None, "1").method == "none"
    assert check_answer("  ", "1").method == "none"
    verdict = check_answer("1+" * 600 + "1", "1201")
    assert (verdict.correct, verdict.method) == (False, "too_long")


def test_verification_works_from_threads() -> None:
    results: dict[str, bool] = {}

    def check(name: str, predicted: str, gold: str) -> None:
        results[name] = check_answer(predicted, gold).correct

    threads = [
        threading.Thread(target=check, args=("symbolic", "(x+1)^2", "x^2+2x+1")),
        threading.Thread(target=check, args=("symbolic_wrong", "(x-1)^2", "x^2+2x+1")),
        threading.Thread(target=check, args=("root", "\\sqrt{8}", "2\\sqrt{2}")),
        threading.Thread(target=check, args=("number", "0.5", "1/2")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == {"symbolic": True, "symbolic_wrong": False, "root": True, "number": True}


@pytest.fixture
def pool() -> Iterator[VerifierPool]:
    own = VerifierPool(max_workers=1)
    yield own
    own.close()


def test_a_pathological_expression_times_out_within_the_bound_even_in_a_thread(pool: VerifierPool) -> None:
    assert pool.compare("\\frac{1}{2}", "0.5", timeout=30).equal  # start the worker first
    outcome: list[tuple[WorkerVerdict, float]] = []

    def run() -> None:
        start = time.perf_counter()
        verdict = check_answer(PATHOLOGICAL, "1", timeout=1.0, pool=pool)
        outcome.append(
            (WorkerVerdict(verdict.correct, verdict.timed_out, verdict.error), time.perf_counter() - start)
        )

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive()
    (verdict, elapsed) = outcome[0]
    assert verdict == WorkerVerdict(False, timed_out=True)
    assert elapsed < 3.0
    # The stuck worker was killed; the pool carries on with a fresh one.
    assert pool.compare("(x+1)^2", "x^2+2x+1", timeout=30) == WorkerVerdict(True)
    assert pool.alive == 1


def test_a_worker_that_cannot_start_gives_an_error_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken_worker.py"
    broken.write_text("import sys\nsys.exit(3)\n")
    monkeypatch.setattr(workers_module, "_WORKER_SOURCE", broken)
    pool = VerifierPool(max_workers=1)
    verdict = pool.compare("x", "x + 0", timeout=5)
    assert not verdict.equal and verdict.error is not None and "did not start" in verdict.error
    assert pool.alive == 0
    pool.close()
    assert "closed" in str(pool.compare("x", "x", timeout=5).error)


def test_symbolic_verdicts_are_cached_but_timeouts_are_not() -> None:
    class CountingPool:
        def __init__(self, verdict: WorkerVerdict) -> None:
            self.calls = 0
            self.verdict = verdict

        def compare(self, gold: str, pred: str, timeout: float) -> WorkerVerdict:
            self.calls += 1
            return self.verdict

    counting = CountingPool(WorkerVerdict(True))
    for _ in range(3):
        assert check_answer("\\sqrt{a_cached}", "a_cached^{1/2}", pool=counting).correct  # type: ignore[arg-type]
    assert counting.calls == 1
    slow = CountingPool(WorkerVerdict(False, timed_out=True))
    for _ in range(2):
        assert check_answer("\\sqrt{b_slow}", "b_slow^{1/2}", pool=slow).timed_out  # type: ignore[arg-type]
    assert slow.calls == 2


def test_the_process_wide_pool_can_be_resized() -> None:
    before = workers_module.default_pool()
    try:
        bigger = workers_module.configure_default_pool(3)
        assert workers_module.default_pool() is bigger and bigger.max_workers == 3
        assert "closed" in str(before.compare("x", "x", timeout=5).error)
    finally:
        workers_module.configure_default_pool(2)
    assert check_answer("\\sqrt{4}", "2").correct  # the fresh default pool serves checks
