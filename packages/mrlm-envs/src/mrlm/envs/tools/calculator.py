"""The ``calculator`` tool: arithmetic expressions, parsed with :mod:`ast` and evaluated by a walker.

Nothing is compiled or executed. The walker accepts numbers, ``+ - * / // % **`` (``^`` means
``**``), unary signs, parentheses, the constants ``pi``, ``e`` and ``tau``, and calls of the
functions in :data:`FUNCTIONS`; any other syntax is refused with a readable error. Integers stay
exact; ``/`` and the math functions give floats, as in Python.

Hostile input cannot make it hang: the expression length and nesting depth are bounded, integer
results are capped at :data:`MAX_INT_BITS` bits (powers are refused *before* they are computed when
they would pass it), ``factorial`` takes at most :data:`MAX_FACTORIAL`, and float overflow is an error.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

from mrlm.envs.tools.registry import Tool, ToolError

Number = int | float

MAX_EXPRESSION_CHARS = 500
MAX_DEPTH = 40
#: About 1000 decimal digits; far beyond any sensible answer, and cheap to multiply.
MAX_INT_BITS = 3400
MAX_FACTORIAL = 400
MAX_ROUND_DIGITS = 100

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculatorError(ToolError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def evaluate(expression: str) -> Number:
    """The value of ``expression``.

    Raises:
        CalculatorError: for syntax outside the allow-list, unknown names, domain errors, division by
            zero, and results that are too large or not finite.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"the expression is too long ({len(expression)} characters; at most {MAX_EXPRESSION_CHARS})"
        )
    text = expression.replace("^", "**").strip()
    if not text:
        raise CalculatorError("the expression is empty")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise CalculatorError(f"invalid syntax: {error.msg}") from None
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, giant literals, deep nesting
        raise CalculatorError(f"the expression cannot be read ({type(error).__name__})") from None
    _check_depth(tree)
    return _Walker().value(tree.body)


def format_number(value: Number) -> str:
    """Integers in full; floats in Python's shortest round-trip form."""
    return str(value) if isinstance(value, int) else repr(value)


def _check_depth(tree: ast.AST) -> None:
    # Iterative, so that the check itself cannot overflow the stack.
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise CalculatorError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


_REFUSED: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "indexing is not allowed",
    ast.Lambda: "lambda is not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.Compare: "comparisons are not allowed",
    ast.BoolOp: "'and'/'or' are not allowed",
    ast.IfExp: "conditional expressions are not allowed",
    ast.NamedExpr: "assignment is not allowed",
    ast.JoinedStr: "strings are not allowed",
    ast.List: "lists are not allowed",
    ast.Tuple: "tuples are not allowed",
    ast.Set: "sets are not allowed",
    ast.Dict: "dicts are not allowed",
    ast.Starred: "unpacking is not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
}


class _Walker:
    """Evaluates an allow-listed tree; every intermediate result is checked for size."""

    def value(self, node: ast.expr) -> Number:
        if isinstance(node, ast.Constant):
            return self._constant(node.value)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, ast.BinOp):
            return _checked(self._binary(node))
        if isinstance(node, ast.Call):
            return _checked(self._call(node))
        reason = _REFUSED.get(type(node), f"'{type(node).__name__}' is not allowed in an expression")
        raise CalculatorError(reason)

    @staticmethod
    def _constant(value: Any) -> Number:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = (
                "complex numbers are" if isinstance(value, complex) else f"{type(value).__name__} values are"
            )
            raise CalculatorError(f"{kind} not allowed; only real numbers")
        return _checked(value)

    @staticmethod
    def _name(name: str) -> Number:
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in FUNCTIONS:
            raise CalculatorError(f"'{name}' is a function; call it, as in {name}(2)")
        shown = name if len(name) <= 40 else name[:37] + "..."
        raise CalculatorError(f"unknown name '{shown}' (constants: {', '.join(CONSTANTS)})")

    def _unary(self, node: ast.UnaryOp) -> Number:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise CalculatorError(f"the operator '{_OPERATOR_TEXT.get(type(node.op), '?')}' is not allowed")

    def _binary(self, node: ast.BinOp) -> Number:
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise CalculatorError(f"the operator '{_OPERATOR_TEXT.get(type(node.op), '?')}' is not allowed")
        left, right = self.value(node.left), self.value(node.right)
        return _apply(operation, left, right)

    def _call(self, node: ast.Call) -> Number:
        if isinstance(node.func, ast.Attribute):
            raise CalculatorError("attribute access is not allowed")
        if not isinstance(node.func, ast.Name):
            raise CalculatorError("only the calculator's functions may be called, by name")
        name = node.func.id
        if name not in FUNCTIONS:
            shown = name if len(name) <= 40 else name[:37] + "..."
            raise CalculatorError(f"unknown function '{shown}' (available: {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise CalculatorError(f"{name}() takes no keyword arguments")
        function, low, high = FUNCTIONS[name]
        if not low <= len(node.args) <= high:
            expected = str(low) if low == high else f"{low} to {high}" if high < 99 else f"at least {low}"
            raise CalculatorError(f"{name}() takes {expected} arguments, got {len(node.args)}")
        arguments = [self.value(argument) for argument in node.args]
        return _apply(function, *arguments, name=name)


def _apply(function: Callable[..., Number], *arguments: Number, name: str = "") -> Number:
    try:
        return function(*arguments)
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("the result is too large") from None
    except (ValueError, TypeError) as error:
        where = f"{name}(): " if name else ""
        raise CalculatorError(f"{where}{error}") from None


def _checked(value: Any) -> Number:
    if isinstance(value, complex):
        raise CalculatorError("the result is not a real number")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError("the result is too large (more than about 1000 digits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is too large or not a number")
    return value


def _power(base: Number, exponent: Number) -> Number:
    # Refuse before computing: an integer power has about exponent * log2|base| bits.
    exact = isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1
    if exact and exponent * math.log2(abs(base)) > MAX_INT_BITS + 1:
        raise CalculatorError("the result is too large (more than about 1000 digits)")
    result: Number = base**exponent
    return result


def _factorial(n: Number) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CalculatorError("factorial() needs a non-negative integer")
    if n > MAX_FACTORIAL:
        raise CalculatorError(f"factorial() is limited to n <= {MAX_FACTORIAL}")
    return math.factorial(n)


def _pow(base: Number, exponent: Number, modulus: Number | None = None) -> Number:
    if modulus is None:
        return _power(base, exponent)
    if not all(isinstance(x, int) for x in (base, exponent, modulus)):
        raise CalculatorError("pow() with a modulus needs integers")
    return pow(int(base), int(exponent), int(modulus))


def _round(value: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(value)
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise CalculatorError(
            f"round() needs an integer number of digits between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}"
        )
    return round(value, digits)


def _log(value: Number, base: Number | None = None) -> float:
    return math.log(value) if base is None else math.log(value, base)


def _true_divide(left: Number, right: Number) -> Number:
    return left / right


_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _true_divide,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: _power,
}

_OPERATOR_TEXT: dict[type[ast.AST], str] = {
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
}

#: name -> (function, fewest arguments, most arguments)
FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int]] = {
    "sqrt": (math.sqrt, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
    "asin": (math.asin, 1, 1),
    "acos": (math.acos, 1, 1),
    "atan": (math.atan, 1, 1),
    "exp": (math.exp, 1, 1),
    "ln": (math.log, 1, 1),
    "log": (_log, 1, 2),
    "log10": (math.log10, 1, 1),
    "log2": (math.log2, 1, 1),
    "abs": (abs, 1, 1),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "factorial": (_factorial, 1, 1),
    "round": (_round, 1, 2),
    "min": (min, 2, 99),
    "max": (max, 2, 99),
    "pow": (_pow, 2, 3),
}

DESCRIPTION = (
    "Evaluate an arithmetic expression exactly (integers) or in floating point. Operators: + - * / // % "
    "and ** (or ^) with parentheses. Functions: sqrt, sin, cos, tan, asin, acos, atan (radians), exp, "
    "ln, log (natural; log(x, b) for base b), log10, log2, abs, floor, ceil, factorial, round(x, digits), "
    "min, max, pow. Constants: pi, e, tau. Example: 'sqrt(2) * 3^4'."
)


def _call_calculator(arguments: dict[str, Any]) -> str:
    return format_number(evaluate(arguments["expression"]))


def calculator_tool() -> Tool:
    """The ``calculator`` tool: ``{"expression": str}`` -> the value as text."""
    return Tool(
        name="calculator",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "the expression, e.g. '(3 + 4) * 2^10'",
                    "maxLength": MAX_EXPRESSION_CHARS,
                }
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
        function=_call_calculator,
    )
