"""A seeded generator of questions that need tools, each with its checkable answer.

=================  =====================================================  ==========================
kind               example                                                tools (each group needed)
=================  =====================================================  ==========================
``arithmetic``     What is 48731 * 9127 - 36512?                          calculator or python
``lookup``         Which engineer built the Varrow Lighthouse?            search
``program``        What is the sum of all prime numbers below 23117?      python
``data``           What is the total quantity in data/sales.csv?          files or python
``lookup_compute`` Take the height of Mount Orrin in metres, multiply ...  search; calculator or python
=================  =====================================================  ==========================

``lookup`` and ``lookup_compute`` draw from the questions and facts of the search collection. Each
task records its kind's parameters in ``metadata`` (for scripted agents and analysis); ``data``
tasks carry the files to place in the workspace, and ``program`` and ``data`` tasks a reference
program that prints the answer.

Tasks with a text answer list the other candidate answers as ``distractors``, which the judge
refuses alongside the expected words: for ``data`` "which item" tasks, the other item names of
:data:`ITEMS`; for ``lookup`` tasks, the question's own ``distractors`` from its record, then the
text answers and aliases of every other question in the collection. The env also gives the judge
the question, whose words (with a few filler words) are the only ones allowed around the expected
answer, so a guess list the task lists nowhere ("goat cow sheep" for "sheep") is refused too; a
question that names its candidates ("which of anchor, bracket or clamp ...?") relies on the
distractors.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrlm.envs.tools.answers import AnswerType
from mrlm.envs.tools.corpus import Corpus, Question

TOOL_NAMES = ("calculator", "search", "python", "files")
KINDS = ("arithmetic", "lookup", "program", "data", "lookup_compute")

#: For each kind, the groups of tools it needs: one tool of every group.
KIND_TOOLS: dict[str, tuple[tuple[str, ...], ...]] = {
    "arithmetic": (("calculator", "python"),),
    "lookup": (("search",),),
    "program": (("python",),),
    "data": (("files", "python"),),
    "lookup_compute": (("search",), ("calculator", "python")),
}


@dataclass(frozen=True)
class ToolTask:
    """A question, its answer, and what solving it takes.

    Attributes:
        kind: one of :data:`KINDS`.
        question: the text shown to the agent.
        answer: the expected answer (a number's canonical text, or the expected words).
        answer_type: ``"integer"`` (exact), ``"number"`` (within ``tolerance``) or ``"text"``.
        tools: groups of tool names; the task needs one tool of each group.
        tolerance: largest accepted absolute error for ``"number"`` answers.
        aliases: other accepted texts for ``"text"`` answers.
        distractors: the task's other candidate answers, for ``"text"`` answers: a text answer that
            names one of them besides the expected words is wrong (see
            :func:`~mrlm.envs.tools.answers.answer_matches`), so a list of guesses is refused.
        files: files (path -> text) placed in the workspace before the episode starts.
        metadata: the parameters the task was made from.
    """

    kind: str
    question: str
    answer: str
    answer_type: AnswerType
    tools: tuple[tuple[str, ...], ...]
    tolerance: float = 0.0
    aliases: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_tools(self) -> tuple[str, ...]:
        """Every tool that helps with this task, in :data:`TOOL_NAMES` order."""
        wanted = {name for group in self.tools for name in group}
        return tuple(name for name in TOOL_NAMES if name in wanted)


def solvable_with(kind: str, tools: Collection[str]) -> bool:
    """Whether ``tools`` include one tool of each group ``kind`` needs."""
    return all(any(name in tools for name in group) for group in KIND_TOOLS[kind])


def available_kinds(
    tools: Collection[str], corpus: Corpus, kinds: Sequence[str] | None = None
) -> tuple[str, ...]:
    """The kinds that ``tools`` can solve, among ``kinds`` (all by default), given the collection."""
    chosen = KINDS if kinds is None else tuple(kinds)
    unknown = [kind for kind in chosen if kind not in KINDS]
    if unknown:
        raise ValueError(f"unknown task kinds {unknown}; choose among {KINDS}")
    has_data = {"lookup": bool(corpus.questions), "lookup_compute": bool(corpus.facts)}
    return tuple(kind for kind in chosen if solvable_with(kind, tools) and has_data.get(kind, True))


def generate_task(rng: np.random.Generator, kind: str, corpus: Corpus) -> ToolTask:
    """Draw one task of ``kind`` from ``rng``."""
    if kind not in KINDS:
        raise ValueError(f"unknown task kind {kind!r}; choose among {KINDS}")
    return _GENERATORS[kind](rng, corpus)


def _int(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in ``[low, high]``."""
    return int(rng.integers(low, high + 1))


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


# --------------------------------------------------------------------------------------------------
# arithmetic


def _arithmetic(rng: np.random.Generator, corpus: Corpus) -> ToolTask:
    template = _pick(rng, ("product", "power", "root", "binomial"))
    tolerance = 0.0
    answer_type: AnswerType = "integer"
    if template == "product":
        a, b, c = _int(rng, 10_000, 99_999), _int(rng, 1000, 9999), _int(rng, 1000, 99_999)
        question, expression, value = f"What is {a} * {b} - {c}?", f"{a} * {b} - {c}", str(a * b - c)
    elif template == "power":
        a, n = _int(rng, 13, 99), _int(rng, 5, 9)
        question, expression, value = f"What is {a}^{n}?", f"{a}**{n}", str(a**n)
    elif template == "root":
        n = _int(rng, 2, 999)
        while math.isqrt(n) ** 2 == n:
            n += 1
        m = _int(rng, 10, 999)
        question = f"What is the square root of {n} multiplied by {m}, rounded to 3 decimal places?"
        expression, value = f"round(sqrt({n}) * {m}, 3)", f"{round(math.sqrt(n) * m, 3):.3f}"
        answer_type, tolerance = "number", 5e-4
    else:
        n = _int(rng, 20, 40)
        k = _int(rng, 5, n - 5)
        question = (
            f"In how many ways can {k} items be chosen from {n} distinct items (order does not matter)?"
        )
        expression, value = f"factorial({n}) // (factorial({k}) * factorial({n - k}))", str(math.comb(n, k))
    return ToolTask(
        "arithmetic",
        question,
        value,
        answer_type,
        KIND_TOOLS["arithmetic"],
        tolerance=tolerance,
        metadata={"template": template, "expression": expression},
    )


# --------------------------------------------------------------------------------------------------
# lookup


def _lookup(rng: np.random.Generator, corpus: Corpus) -> ToolTask:
    item = _pick(rng, corpus.questions)
    answer_type: AnswerType = "integer" if item.answer.isdigit() else "text"
    return ToolTask(
        "lookup",
        item.question,
        item.answer,
        answer_type,
        KIND_TOOLS["lookup"],
        aliases=item.aliases,
        distractors=_lookup_distractors(item, corpus) if answer_type == "text" else (),
        metadata={"document_id": item.document_id},
    )


def _lookup_distractors(item: Question, corpus: Corpus) -> tuple[str, ...]:
    """The question's own ``distractors``, then the text answers (and aliases) of the collection's
    other questions: an answer that also names one of them is a list of guesses."""
    others = (
        text
        for question in corpus.questions
        if question is not item and not question.answer.isdigit()
        for text in (question.answer, *question.aliases)
    )
    return tuple(dict.fromkeys((*item.distractors, *others)))


def _lookup_compute(rng: np.random.Generator, corpus: Corpus) -> ToolTask:
    fact = _pick(rng, corpus.facts)
    k, c = _int(rng, 13, 97), _int(rng, 100, 999)
    question = f"Take {fact.phrase}, multiply it by {k} and add {c}. What is the result?"
    return ToolTask(
        "lookup_compute",
        question,
        str(fact.value * k + c),
        "integer",
        KIND_TOOLS["lookup_compute"],
        metadata={
            "document_id": fact.document_id,
            "phrase": fact.phrase,
            "value": fact.value,
            "k": k,
            "c": c,
        },
    )


# --------------------------------------------------------------------------------------------------
# program


def _program(rng: np.random.Generator, corpus: Corpus) -> ToolTask:
    template = _pick(rng, ("prime_sum", "digit_sum", "fibonacci", "collatz"))
    if template == "prime_sum":
        n = _int(rng, 2000, 50_000)
        question = f"What is the sum of all prime numbers below {n}?"
        value = sum(_primes_below(n))
        code = (
            f"n = {n}\nsieve = bytearray([1]) * n\nsieve[:2] = b'\\x00\\x00'\n"
            "for i in range(2, int(n ** 0.5) + 1):\n"
            "    if sieve[i]:\n        sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))\n"
            "print(sum(i for i in range(n) if sieve[i]))"
        )
        parameters: dict[str, Any] = {"n": n}
    elif template == "digit_sum":
        n, s = _int(rng, 10_000, 99_999), _int(rng, 10, 30)
        question = f"How many integers from 1 to {n} have decimal digits that add up to {s}?"
        value = _count_digit_sum(n, s)
        code = f"print(sum(1 for i in range(1, {n} + 1) if sum(map(int, str(i))) == {s}))"
        parameters = {"n": n, "s": s}
    elif template == "fibonacci":
        n = _int(rng, 60, 150)
        question = f"What is the {_ordinal(n)} Fibonacci number, where F(1) = F(2) = 1?"
        value = _fibonacci(n)
        code = f"a, b = 1, 1\nfor _ in range({n} - 2):\n    a, b = b, a + b\nprint(b)"
        parameters = {"n": n}
    else:
        n = _int(rng, 1000, 99_999)
        question = (
            f"How many steps does the Collatz sequence starting at {n} take to reach 1? "
            "(A step replaces n by n/2 when n is even and by 3n+1 when n is odd.)"
        )
        value = _collatz_steps(n)
        code = (
            f"n, steps = {n}, 0\nwhile n != 1:\n"
            "    n = n // 2 if n % 2 == 0 else 3 * n + 1\n    steps += 1\nprint(steps)"
        )
        parameters = {"n": n}
    return ToolTask(
        "program",
        question,
        str(value),
        "integer",
        KIND_TOOLS["program"],
        metadata={"template": template, "code": code, **parameters},
    )


def _primes_below(n: int) -> list[int]:
    composite = [False] * n
    primes = []
    for i in range(2, n):
        if not composite[i]:
            primes.append(i)
            for multiple in range(i * i, n, i):
                composite[multiple] = True
    return primes


def _count_digit_sum(n: int, target: int) -> int:
    """How many of 1..n have digits adding up to ``target`` (>= 1), by dynamic programming over digits."""
    # ways[t] = numbers below the prefix read so far (same length) whose digits add up to t
    ways = [0] * (target + 1)
    prefix_sum = 0
    for digit in map(int, str(n)):
        grown = [0] * (target + 1)
        for total, count in enumerate(ways):
            for d in range(10):
                if count and total + d <= target:
                    grown[total + d] += count
        for d in range(digit):  # keep the prefix so far, then a smaller digit here
            if prefix_sum + d <= target:
                grown[prefix_sum + d] += 1
        ways, prefix_sum = grown, prefix_sum + digit
    return ways[target] + (prefix_sum == target)


def _fibonacci(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def _collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n = 3 * n + 1 if n % 2 else n // 2
        steps += 1
    return steps


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# --------------------------------------------------------------------------------------------------
# data

SALES_PATH = "data/sales.csv"
LOG_PATH = "logs/server.log"
REGIONS = ("north", "south", "east", "west")
ITEMS = ("anchor", "bracket", "clamp", "dowel", "easel", "ferrule", "gimbal", "hinge")
LOG_MESSAGES = {
    "INFO": ("request served", "cache warmed", "user signed in", "job finished"),
    "WARN": ("slow response", "retrying upstream", "disk 80% full"),
    "ERROR": ("connection refused", "disk quota exceeded", "timeout talking to db"),
}


def _data(rng: np.random.Generator, corpus: Corpus) -> ToolTask:
    template = _pick(rng, ("total_quantity", "region_revenue", "top_item", "log_errors"))
    if template == "log_errors":
        return _log_task(rng)
    rows = _sales_rows(rng)
    totals: dict[str, int] = {}
    for _, item, quantity, _ in rows:
        totals[item] = totals.get(item, 0) + quantity
    while template == "top_item" and sorted(totals.values())[-2:].count(max(totals.values())) > 1:
        rows = _sales_rows(rng)  # a tie has no single answer: draw again
        totals = {}
        for _, item, quantity, _ in rows:
            totals[item] = totals.get(item, 0) + quantity
    text = "region,item,quantity,unit_price\n" + "".join(f"{r},{i},{q},{p}\n" for r, i, q, p in rows)
    intro = f"Your workspace contains the file {SALES_PATH}."
    answer_type: AnswerType = "integer"
    parameters: dict[str, Any] = {}
    if template == "total_quantity":
        question = f"{intro} What is the total of the quantity column over all rows?"
        value = str(sum(q for _, _, q, _ in rows))
        code = (
            f"import csv\nrows = list(csv.DictReader(open({SALES_PATH!r})))\n"
            "print(sum(int(r['quantity']) for r in rows))"
        )
    elif template == "region_revenue":
        region = rows[_int(rng, 0, len(rows) - 1)][0]
        question = (
            f"{intro} What is the total revenue of the {region} region, that is the sum of "
            "quantity * unit_price over its rows?"
        )
        value = str(sum(q * p for r, _, q, p in rows if r == region))
        code = (
            f"import csv\nrows = list(csv.DictReader(open({SALES_PATH!r})))\n"
            "print(sum(int(r['quantity']) * int(r['unit_price'])\n"
            f"          for r in rows if r['region'] == {region!r}))"
        )
        parameters = {"region": region}
    else:
        question = f"{intro} Which item has the largest total quantity, summed over all rows?"
        value = max(totals, key=lambda item: totals[item])
        answer_type = "text"
        code = (
            f"import csv\nfrom collections import Counter\ntotals = Counter()\n"
            f"for r in csv.DictReader(open({SALES_PATH!r})):\n    totals[r['item']] += int(r['quantity'])\n"
            "print(totals.most_common(1)[0][0])"
        )
    return ToolTask(
        "data",
        question,
        value,
        answer_type,
        KIND_TOOLS["data"],
        # "Which item": every other item name is a wrong answer, whether or not the file lists it.
        distractors=tuple(item for item in ITEMS if item != value) if answer_type == "text" else (),
        files={SALES_PATH: text},
        metadata={"template": template, "path": SALES_PATH, "code": code, **parameters},
    )


def _sales_rows(rng: np.random.Generator) -> list[tuple[str, str, int, int]]:
    return [
        (_pick(rng, REGIONS), _pick(rng, ITEMS), _int(rng, 1, 250), _int(rng, 2, 99))
        for _ in range(_int(rng, 12, 24))
    ]


def _log_task(rng: np.random.Generator) -> ToolTask:
    lines, errors = [], 0
    for index in range(_int(rng, 30, 80)):
        level = _pick(rng, ("INFO", "INFO", "INFO", "WARN", "ERROR"))
        errors += level == "ERROR"
        minute, second = divmod(index * 37 + _int(rng, 0, 36), 60)
        lines.append(
            f"2024-03-01 12:{minute % 60:02d}:{second:02d} {level} {_pick(rng, LOG_MESSAGES[level])}\n"
        )
    question = f"Your workspace contains the file {LOG_PATH}. How many of its lines have the level ERROR?"
    code = f"print(sum(1 for line in open({LOG_PATH!r}) if line.split()[2] == 'ERROR'))"
    return ToolTask(
        "data",
        question,
        str(errors),
        "integer",
        KIND_TOOLS["data"],
        files={LOG_PATH: "".join(lines)},
        metadata={"template": "log_errors", "path": LOG_PATH, "code": code},
    )


_GENERATORS = {
    "arithmetic": _arithmetic,
    "lookup": _lookup,
    "program": _program,
    "data": _data,
    "lookup_compute": _lookup_compute,
}
