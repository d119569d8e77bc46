"""Static reading of untrusted code with :mod:`ast`: parsing and module-level name bindings.

Nothing here compiles or runs the code; ``ast.parse`` only builds its syntax tree.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Collection, Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or None when it does not parse (or is too deeply nested to)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the reply's escapes are its business
        try:
            return ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None


def module_bindings(statement: ast.stmt) -> Iterator[str]:
    """The module-level names that running ``statement`` at module level can bind.

    Covers definitions, assignments, loop and ``with`` targets, imports and exception names, in
    compound statements too, and any ``global`` declaration inside functions and classes. Dynamic
    rebinding (``globals()[...]``, ``exec``) is out of reach of a static reading.
    """
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            yield node.name
            stack.extend(node.decorator_list)
            # The body is another scope: only its global declarations reach the module.
            yield from (
                name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names
            )
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        elif isinstance(node, ast.Global):
            yield from node.names
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name
        stack.extend(ast.iter_child_nodes(node))


def binds_any(statement: ast.stmt, names: Collection[str]) -> bool:
    """Whether ``statement`` can bind one of ``names`` at module level."""
    return any(name in names for name in module_bindings(statement))


def top_level_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last top-level ``def`` of ``name`` in ``tree`` (the one that stands), or None."""
    found = None
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            found = statement
    return found


def first_line(statement: ast.stmt) -> int:
    """The first line of ``statement``, its decorators included."""
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])
