"""Independent solvers for generated questions: they read the question TEXT and compute its answer in
another way than the generator does (Fraction evaluation of the written expression, substitution,
sympy, the story's arithmetic redone from the numbers in the sentence)."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction
from typing import Any

import sympy  # type: ignore[import-untyped]
from sympy.parsing.sympy_parser import (  # type: ignore[import-untyped]
    convert_xor,
    implicit_multiplication_application,
    parse_expr,
    standard_transformations,
)

_SYMPY_TRANSFORMS = (*standard_transformations, implicit_multiplication_application, convert_xor)
X, Y = sympy.symbols("x y")


def to_python(text: str) -> str:
    """Written math as a Python expression over Fractions: ``3x`` -> ``3*x``, ``^`` -> ``**``."""
    text = re.sub(r"(\d)\s*([a-z(])", r"\1*\2", text)
    text = re.sub(r"\)\s*([a-z0-9(])", r")*\1", text)
    text = text.replace("^", "**")
    return re.sub(r"(\d+(?:\.\d+)?)", r"Fraction('\1')", text)


def evaluate(text: str, **variables: Any) -> Fraction:
    """``text`` evaluated exactly (our own generated text only: digits, x, y, operators)."""
    assert re.fullmatch(r"[\d\s.+\-*/^()xy]*", text), text
    return Fraction(eval(to_python(text), {"Fraction": Fraction}, dict(variables)))


def sym(text: str) -> sympy.Expr:
    return parse_expr(text, transformations=_SYMPY_TRANSFORMS, local_dict={"x": X, "y": Y})


# --------------------------------------------------------------------------------------------------


def arithmetic(question: str) -> Fraction:
    match = re.fullmatch(
        r"What is (.+?)\?(?: Give the answer as a reduced fraction or an integer\.)?", question
    )
    assert match, question
    return evaluate(match.group(1))


def linear_equation(question: str, use_sympy: bool) -> Fraction:
    match = re.fullmatch(r"Solve for x: (.+) = (.+)", question)
    assert match, question
    lhs, rhs = match.groups()
    if use_sympy:
        (root,) = sympy.solve(sym(lhs) - sym(rhs), X)
        return Fraction(str(root))
    # The equation is linear: f(x) = lhs - rhs is a line through f(0) and f(1).
    at0 = evaluate(lhs, x=Fraction(0)) - evaluate(rhs, x=Fraction(0))
    at1 = evaluate(lhs, x=Fraction(1)) - evaluate(rhs, x=Fraction(1))
    assert at1 != at0, question
    return -at0 / (at1 - at0)


def linear_system(question: str, use_sympy: bool) -> tuple[Fraction, Fraction]:
    match = re.fullmatch(
        r"Solve the system of equations: (.+) = (-?\d+) and (.+) = (-?\d+)\. "
        r"Give the answer as an ordered pair \(x, y\)\.",
        question,
    )
    assert match, question
    lhs1, rhs1, lhs2, rhs2 = match.groups()
    if use_sympy:
        solved = sympy.solve([sym(lhs1) - int(rhs1), sym(lhs2) - int(rhs2)], [X, Y])
        return Fraction(str(solved[X])), Fraction(str(solved[Y]))
    zero = Fraction(0)

    def coefficients(lhs: str) -> tuple[Fraction, Fraction]:
        base = evaluate(lhs, x=zero, y=zero)
        return evaluate(lhs, x=Fraction(1), y=zero) - base, evaluate(lhs, x=zero, y=Fraction(1)) - base

    (a, b), (c, d) = coefficients(lhs1), coefficients(lhs2)
    e, f = Fraction(rhs1), Fraction(rhs2)
    det = a * d - b * c
    assert det != 0, question
    return (e * d - b * f) / det, (a * f - e * c) / det


_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def inequality_holds(question: str, x: Fraction) -> bool:
    """Whether the question's inequality holds at ``x`` (evaluated from the text)."""
    match = re.fullmatch(r"Solve the inequality (.+)\. Give the answer in interval notation\.", question)
    assert match, question
    pieces = re.split(r"\s(<=|>=|<|>)\s", match.group(1))
    values = [evaluate(piece, x=x) for piece in pieces[0::2]]
    return all(_OPS[op](values[i], values[i + 1]) for i, op in enumerate(pieces[1::2]))


def inequality_boundaries(question: str) -> list[Fraction]:
    """Where each relation of the inequality is an equality, solved by sympy."""
    match = re.fullmatch(r"Solve the inequality (.+)\. Give the answer in interval notation\.", question)
    assert match, question
    pieces = re.split(r"\s(?:<=|>=|<|>)\s", match.group(1))
    roots = []
    for left, right in itertools.pairwise(pieces):
        solutions = sympy.solve(sym(left) - sym(right), X)
        roots += [Fraction(str(root)) for root in solutions]
    return roots


def multi_step(question: str) -> Fraction:
    chain = re.fullmatch(r"What is the result when you start with (-?\d+), (.+)\?", question)
    if chain:
        value = Fraction(chain.group(1))
        steps = re.findall(r"(multiply by|add|subtract|divide by) (-?\d+)", chain.group(2))
        assert len(steps) >= 2, question
        for op, number in steps:
            n = Fraction(number)
            value = {
                "multiply by": value * n,
                "add": value + n,
                "subtract": value - n,
                "divide by": value / n,
            }[op]
        return value
    composition = re.fullmatch(r"Let f\(x\) = (.+) and g\(x\) = (.+)\. What is (.+)\?", question)
    assert composition, question
    f_text, g_text, asked = composition.groups()
    f, g = sympy.Lambda(X, sym(f_text)), sympy.Lambda(X, sym(g_text))
    return Fraction(str(sympy.sympify(asked, locals={"f": f, "g": g})))


# --------------------------------------------------------------------------------------------------
# Word problems: one pattern per story; exactly one must match.


def _money(text: str) -> Fraction:
    return Fraction(text)


def word_problem(question: str) -> Fraction:
    answers: list[Fraction] = []
    m = re.fullmatch(
        r"(\w+) buys (\d+) (\w+) that cost \$([\d.]+) each\. How much does \1 spend in total, in dollars\?",
        question,
    )
    if m:
        answers.append(int(m.group(2)) * _money(m.group(4)))
    m = re.fullmatch(
        r"(\w+) buys (.+), and pays with a \$(\d+) bill\. How much change does \1 get, in dollars\?", question
    )
    if m:
        lines = re.findall(r"(\d+) (\w+) at \$([\d.]+) each", m.group(2))
        assert len(lines) in (2, 3), question
        answers.append(int(m.group(3)) - sum((int(q) * _money(p) for q, _, p in lines), Fraction(0)))
    m = re.fullmatch(
        r"A (\w+) travels at (\d+) km/h for (\d+) hours\. How many kilometers does it travel\?", question
    )
    if m:
        answers.append(Fraction(int(m.group(2)) * int(m.group(3))))
    m = re.fullmatch(
        r"A (\w+) travels (\d+) km in (\d+) hours\. What is its average speed, in km/h\?", question
    )
    if m:
        answers.append(Fraction(int(m.group(2)), int(m.group(3))))
    m = re.fullmatch(
        r"A (\w+) travels (\d+) km at (\d+) km/h\. How many hours does the trip take\?", question
    )
    if m:
        answers.append(Fraction(int(m.group(2)), int(m.group(3))))
    m = re.fullmatch(
        r"A (\w+) travels (\d+) km at (\d+) km/h and then (\d+) km at (\d+) km/h\. "
        r"What is its average speed for the whole trip, in km/h\?",
        question,
    )
    if m:
        d1, v1, d2, v2 = (Fraction(int(g)) for g in m.groups()[1:])
        answers.append((d1 + d2) / (d1 / v1 + d2 / v2))
    m = re.fullmatch(
        r"(\w+) has (\d+) (\w+) and shares them equally among (\d+) friends\. How many \3 does each friend get\?",
        question,
    )
    if m:
        answers.append(Fraction(int(m.group(2)), int(m.group(4))))
    m = re.fullmatch(
        r"(\w+) has (\d+) (\w+), keeps (\d+) and shares the rest equally among (\d+) friends\. "
        r"How many \3 does each friend get\?",
        question,
    )
    if m:
        answers.append(Fraction(int(m.group(2)) - int(m.group(4)), int(m.group(5))))
    m = re.fullmatch(r"(.+) share (\d+) (\w+) in the ratio ([\d:]+)\. How many \3 does (\w+) get\?", question)
    if m:
        people = re.split(r", | and ", m.group(1))
        parts = [int(p) for p in m.group(4).split(":")]
        assert len(people) == len(parts), question
        answers.append(Fraction(int(m.group(2)) * parts[people.index(m.group(5))], sum(parts)))
    m = re.fullmatch(
        r"(\w+) is (\d+) years older than (\w+)\. \3 is (\d+) years old\. How old will \1 be in (\d+) years\?",
        question,
    )
    if m:
        answers.append(Fraction(int(m.group(4)) + int(m.group(2)) + int(m.group(5))))
    m = re.fullmatch(
        r"(\w+) is (\d+) times as old as (\w+)\. \3 is (\d+) years old\. How old was \1 (\d+) years ago\?",
        question,
    )
    if m:
        answers.append(Fraction(int(m.group(2)) * int(m.group(4)) - int(m.group(5))))
    m = re.fullmatch(
        r"(\w+) is (\d+) times as old as (\w+)\. In (\d+) years, the sum of their ages will be (\d+)\. How old is \3 now\?",
        question,
    )
    if m:
        b = sympy.Symbol("b")
        times, years, total = int(m.group(2)), int(m.group(4)), int(m.group(5))
        (root,) = sympy.solve(times * b + years + b + years - total, b)
        answers.append(Fraction(str(root)))
    m = re.fullmatch(
        r"(\w+) is (\d+) times as old as (\w+)\. In (\d+) years, \1 will be (\d+) times as old as \3\. How old is \1 now\?",
        question,
    )
    if m:
        b = sympy.Symbol("b")
        times, years, later = int(m.group(2)), int(m.group(4)), int(m.group(5))
        (root,) = sympy.solve(times * b + years - later * (b + years), b)
        answers.append(times * Fraction(str(root)))
    m = re.fullmatch(
        r"A (\w+) costs \$([\d.]+)\. It is on sale for (\d+)% off\. What is the sale price, in dollars\?",
        question,
    )
    if m:
        answers.append(_money(m.group(2)) * (1 - Fraction(int(m.group(3)), 100)))
    m = re.fullmatch(
        r"A (\w+) costs \$([\d.]+)\. It is on sale for (\d+)% off, and then a (\d+)% sales tax is added to the sale price\. "
        r"What is the final price, in dollars\?",
        question,
    )
    if m:
        price, off, tax = _money(m.group(2)), Fraction(int(m.group(3)), 100), Fraction(int(m.group(4)), 100)
        answers.append(price * (1 - off) * (1 + tax))
    m = re.fullmatch(
        r"A (\w+) costs \$([\d.]+)\. Its price is first reduced by (\d+)%, and then the new price is reduced by another (\d+)%\. "
        r"What is the final price, in dollars\?",
        question,
    )
    if m:
        price, first, second = (
            _money(m.group(2)),
            Fraction(int(m.group(3)), 100),
            Fraction(int(m.group(4)), 100),
        )
        answers.append(price * (1 - first) * (1 - second))
    m = re.fullmatch(
        r"After a (\d+)% discount, a (\w+) costs \$([\d.]+)\. What was its original price, in dollars\?",
        question,
    )
    if m:
        answers.append(_money(m.group(3)) / (1 - Fraction(int(m.group(1)), 100)))
    assert len(answers) == 1, (question, answers)
    return answers[0]
