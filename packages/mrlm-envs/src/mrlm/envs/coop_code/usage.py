"""Whether one function really uses another: it calls it and does something with the result.

Read from the syntax tree alone. A call's result counts as used when it flows anywhere: into an
expression, an argument, a condition, a loop, a return value, or a variable that is read later. It
does not count when the call stands alone as a statement, or is stored in a variable that is never
read. A function whose whole body forwards one call (``return helper(x)``, or ``r = helper(x)`` then
``return r``, with plain names and constants as arguments) is a wrapper: it delegates all the work,
so it does not count as using the helper either.

Only calls that can reach the teammate's helper count: not one in a branch that cannot run (under a
constant false condition, or after a ``return`` or ``raise`` of the same block), not one inside a
function that binds the helper's name itself (a parameter, an assignment, a nested ``def``, an
import of that name: the call then reaches that, not the helper), and none at all when the module
binds the function's own name again after its ``def`` (the function that runs is another).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Literal

from mrlm.envs.coop_code.syntax import binds_any, top_level_function

#: How a function relates to a helper: ``used`` is the only one that earns credit.
#: ``helper_not_defined`` is for callers that judge the helper as well (the usage itself may be fine).
Usage = Literal["used", "not_defined", "not_called", "result_ignored", "wrapper", "helper_not_defined"]

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def usage(tree: ast.Module | None, function: str, helper: str) -> Usage:
    """How the top-level function ``function`` of ``tree`` uses the function ``helper``."""
    definition = top_level_function(tree, function) if tree is not None else None
    if tree is None or definition is None:
        return "not_defined"
    later = tree.body[tree.body.index(definition) + 1 :]
    if any(binds_any(statement, {function}) for statement in later) or _binds(definition, helper):
        return "not_called"  # what runs under the name, or what the name calls, is another function
    calls = [node for node in _reachable(definition) if _calls(node, helper)]
    if not calls:
        return "not_called"
    if _is_wrapper(definition, helper):
        return "wrapper"
    parents = {child: node for node in ast.walk(definition) for child in ast.iter_child_nodes(node)}
    loaded = {
        node.id
        for node in ast.walk(definition)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    if any(_result_used(call, parents, loaded) for call in calls):
        return "used"
    return "result_ignored"


def _binds(definition: _Function, name: str) -> bool:
    """Whether ``name`` is bound anywhere in ``definition`` (its parameters included)."""
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id == name:
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
        if (
            node is not definition
            and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == name
        ):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
    return False


def _reachable(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node`` that can run: not the body of an ``if`` or ``while`` whose condition
    is a false constant, nor the ``else`` of an ``if`` whose condition is a true one, nor what follows
    a ``return``, ``raise``, ``break`` or ``continue`` in its block."""
    yield node
    for field, value in ast.iter_fields(node):
        if isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.Constant):
            if field == "body" and not node.test.value:
                continue
            if field == "orelse" and isinstance(node, ast.If) and node.test.value:
                continue
        if isinstance(value, list):
            for child in value:
                if isinstance(child, ast.AST):
                    yield from _reachable(child)
                    if isinstance(child, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                        break  # the rest of this block never runs
        elif isinstance(value, ast.AST):
            yield from _reachable(value)


def _calls(node: ast.AST, helper: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == helper


def _result_used(call: ast.AST, parents: dict[ast.AST, ast.AST], loaded: set[str]) -> bool:
    parent = parents.get(call)
    if isinstance(parent, ast.Expr):
        return False  # a statement of its own: the value is dropped
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        names = [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]
        stored_elsewhere = any(not isinstance(target, ast.Name) for target in targets)
        # Stored into an attribute or item it may be read anywhere; into names, only if one is read.
        return stored_elsewhere or any(name in loaded for name in names)
    return True


def _is_wrapper(definition: _Function, helper: str) -> bool:
    body = list(definition.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return _forwarding_call(body[0].value, helper)
    if len(body) == 2 and isinstance(body[0], ast.Assign) and isinstance(body[1], ast.Return):
        targets, returned = body[0].targets, body[1].value
        return (
            len(targets) == 1
            and isinstance(targets[0], ast.Name)
            and isinstance(returned, ast.Name)
            and returned.id == targets[0].id
            and _forwarding_call(body[0].value, helper)
        )
    return False


def _forwarding_call(node: ast.expr | None, helper: str) -> bool:
    """A call of ``helper`` whose arguments are only names and constants: it passes its input on."""
    if node is None or not _calls(node, helper):
        return False
    assert isinstance(node, ast.Call)
    values = [arg.value if isinstance(arg, ast.Starred) else arg for arg in node.args]
    values += [keyword.value for keyword in node.keywords]
    return all(isinstance(value, (ast.Name, ast.Constant)) for value in values)
