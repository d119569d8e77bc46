"""Make a failing ``assert a == b`` say what it got, as pytest does, for the debugging feedback.

A test that is exactly one ``assert <got> == <expected>`` (or ``is``) without a message becomes
``assert (_mrlm_got := <got>) == (_mrlm_expected := <expected>), "got ..., expected ..."``: the same
comparison in the same order, with a message that is only built when the assert fails. Any other
test is left as it is. This works on task code (trusted data); it never sees the reply.
"""

from __future__ import annotations

import ast
from functools import lru_cache

#: Characters of each value's ``repr`` kept in the message.
REPR_CHARS = 120


@lru_cache(maxsize=4096)
def explained(test: str) -> str:
    """``test`` rewritten to explain a failed equality, or unchanged when it is not one (or is too
    deep to rewrite, or holds an int of more digits than ``int`` writes as text)."""
    try:
        return _explained(test)
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return test


def _explained(test: str) -> str:
    tree = ast.parse(test)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return test
    statement = tree.body[0]
    compare = statement.test
    if statement.msg is not None or not isinstance(compare, ast.Compare) or len(compare.ops) != 1:
        return test
    operator = {ast.Eq: "==", ast.Is: "is"}.get(type(compare.ops[0]))
    if operator is None:
        return test
    got, expected = ast.unparse(compare.left), ast.unparse(compare.comparators[0])
    shown = f"f'got {{repr(_mrlm_got)[:{REPR_CHARS}]}}, expected {{repr(_mrlm_expected)[:{REPR_CHARS}]}}'"
    rewritten = f"assert (_mrlm_got := ({got})) {operator} (_mrlm_expected := ({expected})), {shown}"
    compile(rewritten, "<test>", "exec")  # task data, never executed here
    return rewritten
