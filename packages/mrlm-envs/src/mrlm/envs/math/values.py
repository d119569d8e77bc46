"""Exact values written as text: numbers, tuples and real intervals, read and written without sympy.

This is the fast path of answer checking. Reading is strict: a string that is not plainly one of these
values gives None (and the caller falls back to a symbolic check), so a lenient guess can never make a
wrong answer pass. Everything is an exact rational (``fractions.Fraction``); no float rounding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

# Plain ASCII digits only: ``\d`` would also accept other scripts' digits.
_NUMBER = re.compile(r"-?(?:[0-9][0-9,]*(?:\.[0-9]+)?|\.[0-9]+)(?:\s*/\s*-?[0-9]+)?")
_GROUPED_INT = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+")
_FRAC_ARG = r"(?:\{\s*(-?[0-9.]+)\s*\}|([0-9]))"
_FRAC = re.compile(rf"(-?)\\[dt]?frac\s*{_FRAC_ARG}\s*{_FRAC_ARG}")
# A unit after a number must stand apart from it ("12 apples", "5 km/h"); "2x" is an expression, and
# "5 or 6", "3 times 4", "2 thousand" are not one plain number.
_UNIT = re.compile(
    r"\s+(?!(?:and|or|plus|minus|times|hundred|thousand|million|billion)\b)[A-Za-z][A-Za-z /]*", re.IGNORECASE
)
_TEXT_COMMANDS = re.compile(r"\\(?:text|textbf|mathrm|mbox|operatorname)\s*\{[^{}]*\}")
_ASSIGNMENT = re.compile(r"([A-Za-z])\s*=\s*")
_INFINITY = re.compile(r"^([+-]?)\s*(?:\\infty|infinity|inf|oo|∞)$", re.IGNORECASE)
_RELATION = re.compile(r"(<=|>=|=<|=>|≤|≥|\\leqslant|\\geqslant|\\leq?|\\geq?|\\lt|\\gt|<|>)")
_MEMBERSHIP = re.compile(r"^[A-Za-z]\s*(?:\\in|∈)\s*")

#: Replacements applied before reading: LaTeX spacing and sizing, dollar signs, Unicode look-alikes.
_CLEANUP = (
    ("\\left", ""),
    ("\\right", ""),
    ("\\!", ""),
    ("\\,", ","),  # 1\,000 is a thousands separator
    ("{,}", ","),  # 1{,}000 as well
    ("\\$", ""),
    ("$", ""),
    ("\\%", "%"),
    ("−", "-"),  # Unicode minus sign  # noqa: RUF001
    ("^\\circ", ""),
    ("^{\\circ}", ""),
    ("°", ""),
)


@dataclass(frozen=True)
class Interval:
    """A real interval; ``None`` bounds are infinite (and then never closed).

    Attributes:
        low: the lower bound, or None for minus infinity.
        high: the upper bound, or None for plus infinity.
        low_closed: True when ``low`` belongs to the interval.
        high_closed: True when ``high`` belongs to the interval.
    """

    low: Fraction | None
    high: Fraction | None
    low_closed: bool = False
    high_closed: bool = False


def clean(text: str) -> str:
    """``text`` without math delimiters, ``\\left``/``\\right``, unit commands and look-alike characters."""
    cleaned = text.strip()
    for old, new in _CLEANUP:
        cleaned = cleaned.replace(old, new)
    cleaned = _TEXT_COMMANDS.sub("", cleaned)
    return cleaned.strip().rstrip(".").strip()


def parse_number(text: str, *, percent_as_fraction: bool = False) -> Fraction | None:
    """``text`` as an exact rational, or None when it is not plainly one number.

    Accepts integers with ``,`` thousands groups (``1,000``; an ambiguous ``1,5`` is refused), decimals,
    ``a/b``, ``\\frac{a}{b}`` and ``\\frac12``, a leading ``x =``, one pair of surrounding parentheses,
    dollar signs and ``$...$`` delimiters, degrees, and a trailing unit (``12 apples``,
    ``\\text{ cm}``). A trailing ``%`` divides by 100 when ``percent_as_fraction`` is True
    (``50% == 0.5``); otherwise it is a unit and ``50% == 50``.
    """
    cleaned = clean(text)
    assignment = _ASSIGNMENT.match(cleaned)
    if assignment:
        cleaned = cleaned[assignment.end() :].strip()
    if cleaned.startswith("(") and cleaned.endswith(")") and "," not in cleaned:
        cleaned = cleaned[1:-1].strip()
    percent = cleaned.endswith(("%", " percent"))
    if percent:
        cleaned = cleaned.removesuffix("%").removesuffix(" percent").strip()
    value = _parse_frac(cleaned)
    if value is None:
        value = _parse_plain(cleaned)
    if value is None:
        return None
    return value / 100 if percent and percent_as_fraction else value


def _parse_frac(text: str) -> Fraction | None:
    match = _FRAC.fullmatch(text)
    if match is None:
        return None
    sign, top_braced, top_digit, bottom_braced, bottom_digit = match.groups()
    top = _to_fraction(top_braced or top_digit)
    bottom = _to_fraction(bottom_braced or bottom_digit)
    if top is None or not bottom:
        return None
    return -top / bottom if sign else top / bottom


def _parse_plain(text: str) -> Fraction | None:
    match = _NUMBER.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    if rest and not _UNIT.fullmatch(rest):
        return None
    token = match.group(0).replace(" ", "")
    if "/" not in token:
        return _to_fraction(token)
    top, bottom = (_to_fraction(part) for part in token.split("/"))
    if top is None or not bottom:
        return None
    return top / bottom


def _to_fraction(token: str) -> Fraction | None:
    if "," in token:
        if not _GROUPED_INT.fullmatch(token):
            return None  # "1,5" is ambiguous; refuse rather than guess
        token = token.replace(",", "")
    try:
        return Fraction(token)
    except (ValueError, ZeroDivisionError):
        return None


def parse_tuple(text: str) -> tuple[Fraction, ...] | None:
    """``text`` as an ordered tuple of at least two numbers, or None.

    Accepts ``(2, -3)`` and assignments ``x = 2, y = -3`` (also joined by ``and`` or ``;``), which are
    ordered by variable name, so ``y = -3, x = 2`` is ``(2, -3)`` too.
    """
    cleaned = clean(text)
    if cleaned.startswith("(") and cleaned.endswith(")"):
        parts = _split_top_level(cleaned[1:-1])
        values = [parse_number(part) for part in parts]
    else:
        assignments: list[tuple[str, Fraction | None]] = []
        for part in re.split(r",|;|\band\b", cleaned):
            match = _ASSIGNMENT.match(part.strip())
            if match is None:
                return None
            assignments.append((match.group(1), parse_number(part.strip()[match.end() :])))
        if len({name for name, _ in assignments}) != len(assignments):
            return None
        values = [value for _, value in sorted(assignments)]
    if len(values) < 2 or any(value is None for value in values):
        return None
    return tuple(value for value in values if value is not None)


def parse_interval(text: str) -> Interval | None:
    """``text`` as a real interval, or None.

    Accepts interval notation with any spelling of infinity (``(-\\infty, 3)``, ``[2, oo)``,
    ``(-inf, 3)``, ``[2, ∞)``), optionally after ``x \\in``, and inequalities in one variable:
    ``x < 3``, ``x \\geq 2``, ``3 > x``, ``-2 < x <= 3``.
    """
    cleaned = _MEMBERSHIP.sub("", clean(text))
    if len(cleaned) >= 2 and cleaned[0] in "([" and cleaned[-1] in ")]":
        return _parse_interval_notation(cleaned)
    return _parse_inequality(cleaned)


def _parse_interval_notation(text: str) -> Interval | None:
    parts = _split_top_level(text[1:-1])
    if len(parts) != 2:
        return None
    (low_kind, low), (high_kind, high) = (_parse_bound(part) for part in parts)
    low_closed, high_closed = text[0] == "[", text[-1] == "]"
    if low_kind not in ("finite", "-inf") or high_kind not in ("finite", "+inf"):
        return None
    # "[-oo, 3)" is not an interval of reals: an infinite end is always open.
    if (low_closed and low is None) or (high_closed and high is None):
        return None
    if low is not None and high is not None and low > high:
        return None
    return Interval(low, high, low_closed, high_closed)


def _parse_bound(text: str) -> tuple[str, Fraction | None]:
    """(``"finite"``, value), (``"-inf"`` or ``"+inf"``, None), or (``"unreadable"``, None)."""
    infinity = _INFINITY.match(text.strip())
    if infinity:
        return ("-inf" if infinity.group(1) == "-" else "+inf"), None
    value = parse_number(text)
    return ("unreadable", None) if value is None else ("finite", value)


def _parse_inequality(text: str) -> Interval | None:
    pieces = [piece.strip() for piece in _RELATION.split(text)]
    if len(pieces) not in (3, 5):
        return None
    terms, relations = pieces[0::2], [_relation(op) for op in pieces[1::2]]
    variables = [i for i, term in enumerate(terms) if re.fullmatch(r"[A-Za-z]", term)]
    if len(variables) != 1:
        return None
    at = variables[0]
    numbers = [parse_number(term) if i != at else None for i, term in enumerate(terms)]
    if any(numbers[i] is None for i in range(len(terms)) if i != at):
        return None
    low: Fraction | None = None
    high: Fraction | None = None
    low_closed = high_closed = False
    # Walk each relation "left op right"; one side is the variable.
    for i, (direction, closed) in enumerate(relations):
        left, right = numbers[i], numbers[i + 1]
        if i + 1 == at:  # number op x
            bound, is_lower = left, direction == "<"
        elif i == at:  # x op number
            bound, is_lower = right, direction == ">"
        else:
            return None
        if is_lower:
            if low is not None:
                return None
            low, low_closed = bound, closed
        else:
            if high is not None:
                return None
            high, high_closed = bound, closed
    if low is not None and high is not None and low > high:
        return None
    return Interval(low, high, low_closed, high_closed)


def _relation(op: str) -> tuple[str, bool]:
    """(``"<"`` or ``">"``, closed) for a relation symbol."""
    closed = op in ("<=", ">=", "=<", "=>", "≤", "≥") or op.startswith(("\\le", "\\ge"))
    less = op in ("<", "<=", "=<", "≤", "\\lt") or op.startswith("\\le")
    return ("<" if less else ">", closed)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside braces and parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


# --------------------------------------------------------------------------------------------------
# Writing canonical answers


def format_number(value: Fraction) -> str:
    """Canonical text of an exact value: ``7``, ``-3/4``."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def format_decimal(value: Fraction) -> str:
    """``value`` as a terminating decimal (``16.25``, ``-0.5``, ``3``); a fraction when it does not end."""
    numerator, denominator = value.numerator, value.denominator
    if denominator == 1:
        return str(numerator)
    rest, twos, fives = denominator, 0, 0
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return format_number(value)
    places = max(twos, fives)  # 10**places is the smallest power of ten the denominator divides
    digits = str(abs(numerator) * 10**places // denominator).rjust(places + 1, "0")
    sign = "-" if numerator < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def format_tuple(values: tuple[Fraction, ...]) -> str:
    """``(2, -3/4)``."""
    return "(" + ", ".join(format_number(value) for value in values) + ")"


def format_interval(interval: Interval) -> str:
    """Interval notation with LaTeX infinities: ``(-\\infty, 5)``, ``[5/3, \\infty)``, ``(-2, 3]``."""
    low = "-\\infty" if interval.low is None else format_number(interval.low)
    high = "\\infty" if interval.high is None else format_number(interval.high)
    left = "[" if interval.low_closed else "("
    right = "]" if interval.high_closed else ")"
    return f"{left}{low}, {high}{right}"
