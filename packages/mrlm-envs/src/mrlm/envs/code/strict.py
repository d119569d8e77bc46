"""Route the comparisons, asserted values and arithmetic of test code through the harness's strict checks.

A solution can return an object whose ``__eq__`` always says True, whose ``__bool__`` lies, or whose
``__sub__`` answers zero, and pass ``assert f(x) == expected``, ``assert f(x)`` or
``assert abs(f(x) - expected) < 1e-6`` without computing anything. So every comparison in test code
(``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``), every binary ``+ - * / // % **``
and the value tested by every ``assert`` are rewritten into calls of the checks of
:mod:`mrlm.envs.code._harness` (see its "Strict checks" section for what they accept):

- ``a == b`` becomes ``'@@mrlm-strict'.eq(a, b)``; a chain ``a < b < c`` becomes
  ``'@@mrlm-strict'.lt(a, (t := b)) and '@@mrlm-strict'.lt(t, c)``, which evaluates each operand once
  and stops at the first false link, as the chain does. ``is`` and ``is not`` stay: no object can
  fake its identity.
- ``assert v`` becomes ``assert '@@mrlm-strict'.truth(v)``, looking through ``not``, ``and``/``or``,
  conditional expressions and the generator of ``all``/``any``, and leaving comparisons and
  constants alone.
- ``a - b`` becomes ``'@@mrlm-strict'.arith('-', a, b)``, and likewise ``+ * / // % **``.
- Comparisons and arithmetic between the task's own constants (``10**20 + 5``) stay as they are.

The harness swaps the string constant for the checks once the tests are compiled. This works on task
code (trusted data); it never sees the reply.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from mrlm.envs.code._harness import STRICT_CONSTANT

_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.In: "is_in",
    ast.NotIn: "not_in",
}
_ARITHMETIC: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
#: The prefix of the names that hold the middle operands of a chained comparison.
TEMPORARY = "_mrlm_operand_"


@lru_cache(maxsize=4096)
def strict_code(code: str) -> str:
    """``code`` (test code) with its comparisons, asserted values and arithmetic routed through the
    strict checks; unchanged when it does not compile.

    Where a chain's temporaries cannot be assigned (in a comprehension of a class body, or in a
    comprehension's iterable), chains are left as they are and the rest is still routed.
    """
    for split_chains in (True, False):
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError):
            return code
        rewritten = ast.unparse(_Router(split_chains).visit(tree))
        if _compiles(rewritten):
            return rewritten
    return code


def _compiles(code: str) -> bool:
    try:
        compile(code, "<test>", "exec")  # task data, never executed here
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def _check(name: str, *arguments: ast.expr) -> ast.Call:
    """A call of the strict check ``name``."""
    function = ast.Attribute(value=ast.Constant(STRICT_CONSTANT), attr=name, ctx=ast.Load())
    return ast.Call(func=function, args=list(arguments), keywords=[])


#: The parts of an expression made of constants alone, such as ``10**20 + 5``.
_CONSTANT_PARTS = (
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.Tuple,
    ast.operator,
    ast.unaryop,
    ast.expr_context,
)


def _constants(*nodes: ast.expr) -> bool:
    """Whether ``nodes`` are made of the task's own constants alone, which need no check."""
    return all(isinstance(part, _CONSTANT_PARTS) for node in nodes for part in ast.walk(node))


def _is_check(node: ast.expr) -> bool:
    function = node.func if isinstance(node, ast.Call) else None
    return (
        isinstance(function, ast.Attribute)
        and isinstance(function.value, ast.Constant)
        and function.value.value == STRICT_CONSTANT
    )


class _Router(ast.NodeTransformer):
    """Rewrites one module's comparisons, arithmetic and asserts, innermost first."""

    def __init__(self, split_chains: bool) -> None:
        self.split_chains = split_chains
        self.temporaries = 0

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return self._link(node.left, node.ops[0], node.comparators[0])
        if not self.split_chains:
            return node
        links, left = [], node.left
        for index, (operator, right) in enumerate(zip(node.ops, node.comparators, strict=True)):
            if index == len(node.ops) - 1:
                links.append(self._link(left, operator, right))
                break
            # A middle operand is evaluated once and met twice, as in the chain itself.
            name = f"{TEMPORARY}{self.temporaries}"
            self.temporaries += 1
            links.append(self._link(left, operator, ast.NamedExpr(ast.Name(name, ast.Store()), right)))
            left = ast.Name(name, ast.Load())
        return ast.BoolOp(op=ast.And(), values=links)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        symbol = _ARITHMETIC.get(type(node.op))
        if symbol is None or _constants(node.left, node.right):
            return node
        return _check("arith", ast.Constant(symbol), node.left, node.right)

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        self.generic_visit(node)
        node.test = _truth(node.test)
        return node

    @staticmethod
    def _link(left: ast.expr, operator: ast.cmpop, right: ast.expr) -> ast.expr:
        name = _COMPARISONS.get(type(operator))
        if name is None or _constants(left, right):  # is, is not: identity, which no object can fake
            return ast.Compare(left=left, ops=[operator], comparators=[right])
        return _check(name, left, right)


def _truth(node: ast.expr) -> ast.expr:
    """``node``, an asserted expression, with the values whose truth it tests made strict."""
    if isinstance(node, ast.BoolOp):
        return ast.BoolOp(op=node.op, values=[_truth(value) for value in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.UnaryOp(op=node.op, operand=_truth(node.operand))
    if isinstance(node, ast.IfExp):
        return ast.IfExp(test=_truth(node.test), body=_truth(node.body), orelse=_truth(node.orelse))
    if _is_check(node) or isinstance(node, (ast.Compare, ast.Constant)):
        return node  # a strict comparison, an identity, or the task's own constant
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("all", "any")
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))
    ):
        node.args[0].elt = _truth(node.args[0].elt)
    return _check("truth", node)
