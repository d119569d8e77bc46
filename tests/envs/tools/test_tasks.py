"""The generator is seeded, its answers are right (checked a second way), and tools restrict the kinds."""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np
import pytest

from mrlm.envs.tools.answers import answer_matches, parse_number
from mrlm.envs.tools.corpus import load_corpus
from mrlm.envs.tools.tasks import KIND_TOOLS, KINDS, ToolTask, available_kinds, generate_task

CORPUS = load_corpus()


def _prime_sum(n: int) -> int:
    """A numpy sieve of Eratosthenes."""
    sieve = np.ones(n, dtype=bool)
    sieve[:2] = False
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = False
    return int(np.flatnonzero(sieve).sum())


def _fibonacci(n: int) -> int:
    """Fast doubling: F(2k) = F(k) (2 F(k+1) - F(k)), F(2k+1) = F(k)^2 + F(k+1)^2."""

    def pair(k: int) -> tuple[int, int]:
        if k == 0:
            return 0, 1
        a, b = pair(k // 2)
        c, d = a * (2 * b - a), a * a + b * b
        return (d, c + d) if k % 2 else (c, d)

    return pair(n)[0]


def _count_digit_sum(n: int, target: int) -> int:
    """Brute force over 1..n, vectorised with numpy."""
    numbers, sums = np.arange(1, n + 1), np.zeros(n, dtype=np.int64)
    while numbers.any():
        numbers, digits = np.divmod(numbers, 10)
        sums += digits
    return int((sums == target).sum())


def _collatz(n: int) -> int:
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _independent_answer(task: ToolTask) -> str:
    """The answer worked out from the question text and files, not from the generator's code."""
    q, numbers = task.question, [int(n) for n in re.findall(r"\d+", task.question)]
    if task.kind == "arithmetic":
        if "square root" in q:
            return f"{math.sqrt(numbers[0]) * numbers[1]:.3f}"
        if "chosen" in q:
            k, n = numbers[0], numbers[1]
            return str(math.factorial(n) // (math.factorial(k) * math.factorial(n - k)))
        if "^" in q:
            return str(math.prod([numbers[0]] * numbers[1]))
        return str(numbers[0] * numbers[1] - numbers[2])
    if task.kind == "program":
        if "prime" in q:
            return str(_prime_sum(numbers[0]))
        if "Fibonacci" in q:
            return str(_fibonacci(numbers[0]))
        if "Collatz" in q:
            return str(_collatz(numbers[0]))
        _, n, target = numbers  # "from 1 to n ... add up to target"
        return str(_count_digit_sum(n, target))
    if task.kind == "data":
        (text,) = task.files.values()
        if "ERROR" in q:
            return str(sum(line.split(" ")[2] == "ERROR" for line in text.splitlines()))
        rows = list(csv.DictReader(io.StringIO(text)))
        if "revenue" in q:
            region = re.search(r"of the (\w+) region", q)
            assert region
            return str(
                sum(int(r["quantity"]) * int(r["unit_price"]) for r in rows if r["region"] == region.group(1))
            )
        if "total of the quantity" in q:
            return str(sum(int(r["quantity"]) for r in rows))
        totals: dict[str, int] = {}
        for r in rows:
            totals[r["item"]] = totals.get(r["item"], 0) + int(r["quantity"])
        best = sorted(totals.values())
        assert best[-1] > best[-2], "a tie would make the answer ambiguous"
        return max(totals, key=totals.__getitem__)
    document = next(d for d in CORPUS.documents if d.id == task.metadata["document_id"])
    if task.kind == "lookup":
        assert task.answer.casefold() in document.text.casefold()
        return task.answer
    value = task.metadata["value"]
    assert str(value) in document.text and task.metadata["phrase"] in q
    match = re.search(r"multiply it by (\d+) and add (\d+)", q)
    assert match
    k, c = int(match.group(1)), int(match.group(2))
    return str(value * k + c)


@pytest.mark.parametrize("kind", KINDS)
def test_answers_are_right(kind: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(40):
        task = generate_task(rng, kind, CORPUS)
        assert task.kind == kind and task.tools == KIND_TOOLS[kind]
        expected = _independent_answer(task)
        assert answer_matches(expected, task.answer, task.answer_type, tolerance=task.tolerance), task
        if task.answer_type != "text":
            assert parse_number(task.answer) is not None


def test_the_generator_is_deterministic_and_varied() -> None:
    for kind in KINDS:
        first = [generate_task(np.random.default_rng(3), kind, CORPUS) for _ in range(2)]
        assert first[0] == first[1]
        tasks = [generate_task(np.random.default_rng(seed), kind, CORPUS) for seed in range(30)]
        assert len({(task.question, str(task.files)) for task in tasks}) > 10, kind
    with pytest.raises(ValueError, match="unknown task kind"):
        generate_task(np.random.default_rng(0), "poetry", CORPUS)


def test_data_tasks_carry_files_and_code() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        task = generate_task(rng, "data", CORPUS)
        assert len(task.files) == 1 and next(iter(task.files)) in task.question
        assert "open(" in task.metadata["code"] and task.expected_tools == ("python", "files")


@pytest.mark.parametrize(
    ("tools", "kinds"),
    [
        (["calculator", "search", "python", "files"], KINDS),
        (["calculator"], ("arithmetic",)),
        (["search"], ("lookup",)),
        (["python"], ("arithmetic", "program", "data")),
        (["files"], ("data",)),
        (["search", "calculator"], ("arithmetic", "lookup", "lookup_compute")),
        (["search", "python"], KINDS),
    ],
)
def test_tools_restrict_the_kinds(tools: list[str], kinds: tuple[str, ...]) -> None:
    assert available_kinds(tools, CORPUS) == kinds


def test_kinds_need_their_data() -> None:
    empty = load_corpus([{"id": "a", "title": "A", "text": "nothing to ask"}])
    assert available_kinds(["search", "calculator"], empty) == ("arithmetic",)
    assert available_kinds(["python"], CORPUS, ["program"]) == ("program",)
    with pytest.raises(ValueError, match="unknown task kinds"):
        available_kinds(["python"], CORPUS, ["poetry"])


@pytest.mark.parametrize(
    ("answer", "expected", "tolerance"),
    [
        ("1e999999999", "13265.692", 5e-4),  # overflows the default context's exponent range
        ("-1e999999999", "1e999999999", 0.5),
        ("\\boxed{1e999999999}", "-1e999999999", 0.0),
        ("1e99999999999999999999", "1", 0.5),  # beyond any exponent Decimal can hold
        ("nan", "1", 0.5),
        ("sNaN", "1", 0.5),
        ("inf", "1", 0.5),
        ("1", "sNaN", 0.0),  # comparing with a signalling NaN is an invalid operation
        ("1", "nan", 0.5),
        ("2", "1", math.nan),
    ],
)
def test_numbers_out_of_decimal_range_are_wrong_not_errors(
    answer: str, expected: str, tolerance: float
) -> None:
    # Each of these raised a decimal signal (Overflow or InvalidOperation) out of answer_matches.
    assert not answer_matches(answer, expected, "number", tolerance=tolerance)
    assert not answer_matches(answer, expected, "integer")


def test_huge_and_tiny_numbers_still_match_when_right() -> None:
    assert answer_matches("1e999999999", "1e999999999", "number", tolerance=0.5)
    assert answer_matches("1e-999999999", "0", "number", tolerance=5e-4)
    assert not answer_matches("1e-999999999", "0", "integer")
