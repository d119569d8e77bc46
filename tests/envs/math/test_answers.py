"""Finding the final answer in a reply, and reading plain values exactly."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from mrlm.envs.math import (
    Interval,
    extract,
    extract_answer,
    last_boxed,
    parse_interval,
    parse_number,
    parse_tuple,
)
from mrlm.envs.math.answers import ANSWER_WINDOW


@pytest.mark.parametrize(
    ("text", "answer", "source"),
    [
        ("so the result is \\boxed{\\frac{3}{4}} indeed", "\\frac{3}{4}", "boxed"),
        ("first \\boxed{1} then \\boxed{2}", "2", "boxed"),
        ("nested \\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{1}{\\sqrt{2}}", "boxed"),
        ("$\\boxed{x^{2}}$.", "x^{2}", "boxed"),
        ("\\fbox{7}", "7", "boxed"),
        ("\\boxed {5}", "5", "boxed"),
        ("\\boxed{ $12$ }", "12", "boxed"),
        ("ends unclosed \\boxed{3} and \\boxed{4", "3", "boxed"),
        ("broken \\boxed{12", "12", "last_number"),
        ("empty \\boxed{} but 7", "7", "last_number"),
        ("work <<48/2=24>>\n#### 72\n", "72", "hashes"),
        ("#### 1,000", "1,000", "hashes"),
        ("The answer is 1,000.", "1,000", "answer_is"),
        ("**Final Answer:** 42", "42", "answer_is"),
        ("answer: -5", "-5", "answer_is"),
        ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}", "answer_is"),
        ("I got 3 then 4 and finally 5", "5", "last_number"),
        ("about 1,200, I think", "1,200", "last_number"),
        ("no numbers here", None, None),
        ("", None, None),
        ("\\boxed{", None, None),
    ],
)
def test_extract(text: str, answer: str | None, source: str | None) -> None:
    found = extract(text)
    assert (found.answer, found.source) == (answer, source)
    assert extract_answer(text) == answer


def test_boxed_beats_later_numbers_and_hashes_beat_phrases() -> None:
    assert extract("\\boxed{9} and then I checked 10 cases").answer == "9"
    assert extract("the answer is 4\n#### 5").answer == "5"


def test_only_the_tail_is_read() -> None:
    text = "\\boxed{1}" + " filler" * (ANSWER_WINDOW // 7 + 10)
    assert extract(text).answer is None  # the box lies before the window; "filler" has no number
    assert extract(text, window=None).answer == "1"
    assert extract("x" * 50_000 + " \\boxed{2}").answer == "2"


def test_last_boxed_handles_nesting_and_gives_up_on_spam_quickly() -> None:
    assert last_boxed("a \\boxed{\\frac{1}{2}} b") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{\\boxed{3}}") == "3"
    spam = "\\boxed{" * 8_000
    start = time.perf_counter()
    assert last_boxed(spam) is None
    assert extract(spam + "{" * 50_000).answer is None
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", Fraction(42)),
        ("-3/4", Fraction(-3, 4)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("\\frac{1}{2}", Fraction(1, 2)),
        ("\\frac12", Fraction(1, 2)),
        ("\\dfrac{3}{4}", Fraction(3, 4)),
        ("-\\frac{1}{2}", Fraction(-1, 2)),
        ("\\frac{-1}{2}", Fraction(-1, 2)),
        ("1,000", Fraction(1000)),
        ("1,234,567", Fraction(1234567)),
        ("1\\,000", Fraction(1000)),
        ("$12.50", Fraction(25, 2)),
        ("\\$12", Fraction(12)),
        ("12 apples", Fraction(12)),
        ("5 km/h", Fraction(5)),
        ("12\\text{ cm}", Fraction(12)),
        ("90^\\circ", Fraction(90)),
        ("x = 3", Fraction(3)),
        ("(-5)", Fraction(-5)),
        ("−7", Fraction(-7)),  # noqa: RUF001 (a Unicode minus sign, on purpose)
        ("50%", Fraction(50)),
        ("50\\%", Fraction(50)),
    ],
)
def test_parse_number_reads_plain_numbers(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text", ["2x", "1,5", "1/0", "3 + 4", "x", "", "1e3", "sqrt(2)", "5 and 6", "5 or 6", "2 thousand", "١٢"]
)
def test_parse_number_refuses_what_is_not_plainly_a_number(text: str) -> None:
    assert parse_number(text) is None


def test_percent_reading_is_configured() -> None:
    assert parse_number("50%", percent_as_fraction=True) == Fraction(1, 2)
    assert parse_number("12.5 percent", percent_as_fraction=True) == Fraction(1, 8)
    assert parse_number("50%", percent_as_fraction=False) == 50


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("(2, 3)", (2, 3)),
        ("(-1/2,4)", (Fraction(-1, 2), 4)),
        ("x = 2, y = 3", (2, 3)),
        ("y=3 and x=2", (2, 3)),
        ("\\left(2, 3\\right)", (2, 3)),
        ("(1, 2, 3)", (1, 2, 3)),
        ("(2)", None),
        ("x = 2, x = 3", None),
        ("(a, 3)", None),
    ],
)
def test_parse_tuple(text: str, values: tuple[int, ...] | None) -> None:
    expected = None if values is None else tuple(Fraction(v) for v in values)
    assert parse_tuple(text) == expected


@pytest.mark.parametrize(
    ("text", "interval"),
    [
        ("(-\\infty, 3)", Interval(None, Fraction(3))),
        ("(-inf, 3)", Interval(None, Fraction(3))),
        ("(-oo, 3)", Interval(None, Fraction(3))),
        ("x < 3", Interval(None, Fraction(3))),
        ("3 > x", Interval(None, Fraction(3))),
        ("[2, oo)", Interval(Fraction(2), None, True, False)),
        ("[2, ∞)", Interval(Fraction(2), None, True, False)),
        ("x \\geq 2", Interval(Fraction(2), None, True, False)),
        ("x>=2", Interval(Fraction(2), None, True, False)),
        ("x ≥ 2", Interval(Fraction(2), None, True, False)),
        ("x \\in [2, \\infty)", Interval(Fraction(2), None, True, False)),
        ("-2 < x \\le 7/2", Interval(Fraction(-2), Fraction(7, 2), False, True)),
        ("3 >= x > -2", Interval(Fraction(-2), Fraction(3), False, True)),
        ("(-2, \\frac{7}{2}]", Interval(Fraction(-2), Fraction(7, 2), False, True)),
        ("[-\\infty, 3)", None),
        ("(5, 2)", None),
        ("x < 3 < 5", None),
        ("3 < x < 2", None),
        ("(1, 2) \\cup (3, 4)", None),
        ("x + 1 < 3", None),
    ],
)
def test_parse_interval(text: str, interval: Interval | None) -> None:
    assert parse_interval(text) == interval
