"""Reading Python source with :mod:`ast`: parsing, and cutting a definition out of its module.

Nothing here compiles or runs the code; ``ast.parse`` only builds its syntax tree.
"""

from __future__ import annotations

import ast
import warnings


def parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or None when it does not parse (or is too deeply nested to)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about a reply's escapes are its business
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None


def first_line(node: ast.stmt) -> int:
    """The first line of ``node``, its decorators included (1-based)."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def at_column_zero(lines: list[str], node: ast.stmt) -> str:
    """The source of ``node`` (decorators included) moved left to column 0.

    ``lines`` are the module's lines split on ``"\\n"``. Each line loses the node's indentation when
    it starts with that much whitespace; a less indented line can only continue a string or a
    bracket, where indentation carries no meaning, and is kept as it is.
    """
    column = node.col_offset
    chunk = lines[first_line(node) - 1 : last_line(node)]
    return "\n".join(line[column:] if not line[:column].strip() else line for line in chunk)
