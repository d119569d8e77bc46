"""Pull a final answer out of free-form model text and compare it with the gold answer exactly.

Numbers are compared as exact rationals (``fractions.Fraction``): ``1/2``, ``0.5`` and
``\\frac{1}{2}`` are the same answer, ``1,000`` is 1000, and no float rounding can make a wrong answer
pass.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BOXED = re.compile(r"\\boxed\s*\{")
_HASHES = re.compile(r"####\s*([^\n]+)")
_ANSWER_IS = re.compile(r"answer\s*(?:is|:|=)\s*:?\s*([^\n]+)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*-?\d+)?|-?\.\d+")
_FRAC = re.compile(r"^\\[dt]?frac\s*\{\s*(-?[\d.]+)\s*\}\s*\{\s*(-?[\d.]+)\s*\}$")
_GROUPED_INT = re.compile(r"^-?\d{1,3}(?:,\d{3})+$")


def extract_answer(text: str) -> str | None:
    """The final answer stated in ``text``, or None.

    Looks, in order of preference, at the last ``\\boxed{...}``, the last ``#### ...`` line, the last
    "the answer is ..." phrase, then the last number anywhere.
    """
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    for pattern in (_HASHES, _ANSWER_IS):
        matches = pattern.findall(text)
        if matches:
            return str(matches[-1]).strip().rstrip(".").strip()
    numbers = _NUMBER.findall(text)
    return numbers[-1].strip() if numbers else None


def _last_boxed(text: str) -> str | None:
    starts = [m.end() for m in _BOXED.finditer(text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None  # unbalanced: no usable answer


def parse_number(text: str) -> Fraction | None:
    """``text`` as an exact rational, or None when it is not a plain number.

    Accepts integers (with ``,`` thousands groups), decimals, ``a/b``, ``\\frac{a}{b}``, a leading ``$``,
    surrounding ``$...$`` math delimiters and a trailing unit word (``12 apples``).
    """
    cleaned = text.strip().strip("$").strip()
    cleaned = re.sub(r"\\(?:text|mathrm)\{[^}]*\}", "", cleaned).strip()
    frac = _FRAC.match(cleaned)
    if frac:
        numerator, denominator = (_to_fraction(part) for part in frac.groups())
        if numerator is None or denominator in (None, 0):
            return None
        assert denominator is not None
        return numerator / denominator
    match = _NUMBER.match(cleaned)
    if match is None:
        return None
    rest = cleaned[match.end() :]
    # A unit word must stand apart ("12 apples"); "2x" or "3 + 4" is an expression, not a number.
    if rest and not re.fullmatch(r"%?\.?|\s+[A-Za-z][A-Za-z ]*\.?", rest):
        return None
    rest = rest.strip()
    token = match.group(0).replace(" ", "")
    if "/" in token:
        top, bottom = token.split("/")
        numerator, denominator = _to_fraction(top), _to_fraction(bottom)
        if numerator is None or denominator in (None, 0):
            return None
        assert denominator is not None
        value = numerator / denominator
    else:
        parsed = _to_fraction(token)
        if parsed is None:
            return None
        value = parsed
    if rest.startswith("%"):
        value /= 100
    return value


def _to_fraction(token: str) -> Fraction | None:
    if "," in token:
        if not _GROUPED_INT.match(token):
            return None  # "1,5" is ambiguous; refuse rather than guess
        token = token.replace(",", "")
    try:
        return Fraction(token)
    except (ValueError, ZeroDivisionError):
        return None


def answers_match(predicted: str | None, gold: str) -> bool:
    """True when ``predicted`` states the same value as ``gold``.

    Numbers compare as exact rationals; anything else compares as text with spaces removed.
    """
    if predicted is None:
        return False
    gold_value = parse_number(gold)
    if gold_value is not None:
        return parse_number(predicted) == gold_value
    squash = re.compile(r"\s+")
    return squash.sub("", predicted) == squash.sub("", gold)
