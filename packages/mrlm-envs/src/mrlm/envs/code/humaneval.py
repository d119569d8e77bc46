"""HumanEval-format records: ``task_id``, ``prompt``, ``test`` (defining ``check(candidate)``),
``entry_point`` and optionally ``canonical_solution``.

The original harness runs ``prompt + completion + test + check(entry_point)``, one pass/fail for the
whole ``check``. To give a pass fraction, ``check``'s body is split: each top-level statement of it
that contains an ``assert`` becomes one test, and the other statements (imports, assignments) become
set-up steps that run in order between them. The statements run at module level in the tests'
namespace, with ``check``'s parameter bound to the solution, which keeps their meaning: a function's
locals and a module's globals behave alike for straight-line code. The split is refused, and the
whole ``check(candidate)`` counts as one test, when that could change the meaning: ``check`` has
decorators, more than one parameter, ``return``/``yield``/``await``/``nonlocal`` anywhere in it,
or no statement with an ``assert``. Always-true asserts (``assert True, "..."``, found in several
HumanEval tests) count as set-up, not as tests, so that they give no free credit; a ``check`` with
neither another assert nor a ``raise`` is refused, since every reply would pass it.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from typing import Any

from mrlm.envs.code.tasks import CodeTask, TestStep, code_before_definition

FIELDS = ("task_id", "prompt", "test", "entry_point")

_UNSPLITTABLE = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Nonlocal)


def humaneval_task(record: Mapping[str, Any], where: str) -> CodeTask:
    """A task from a HumanEval record; ``where`` names the record in error messages."""
    prompt, test, entry_point = (_text(record, name, where) for name in ("prompt", "test", "entry_point"))
    if not entry_point.isidentifier():
        raise ValueError(f"{where}: entry_point {entry_point!r} is not a Python name")
    try:
        tree = ast.parse(test)
    except SyntaxError as error:
        raise ValueError(f"{where}: the test does not compile: {error}") from None
    checks = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if len(checks) != 1:
        raise ValueError(f"{where}: the test must define one function check(candidate)")
    if not any(_can_fail(node) for node in ast.walk(checks[0])):
        # Every reply that runs would pass it: a reward any reply earns.
        raise ValueError(
            f"{where}: check(candidate) has no assert (other than an always-true one) and no raise, "
            "so it passes every reply"
        )

    context = code_before_definition(prompt, entry_point)
    if not _compiles(context):
        context = ""  # the prompt's helpers then come from the solution's names
    split = split_check(test, checks[0])
    # Split, check's statements run as steps and check itself is left out of the set-up, so that
    # its source (every expected value) is not lying in the tests' namespace.
    setup = context + "\n" + _without(test, tree, drop_check=split is not None)
    steps = split or (TestStep("check(candidate)"),)
    canonical = record.get("canonical_solution")
    return CodeTask(
        task_id=str(record["task_id"]),
        entry_point=entry_point,
        description="",
        prompt_code=prompt,
        test_setup=setup,
        steps=steps,
        canonical_solution=prompt + canonical if isinstance(canonical, str) else None,
        source="humaneval",
    )


def split_check(test: str, check: ast.FunctionDef) -> tuple[TestStep, ...] | None:
    """``check``'s body as steps, one counted step per statement with an assert; None if unsafe."""
    arguments = check.args
    if check.decorator_list or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    parameters = arguments.posonlyargs + arguments.args
    if len(parameters) != 1 or any(isinstance(node, _UNSPLITTABLE) for node in ast.walk(check)):
        return None
    body = check.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring
    steps = []
    name = parameters[0].arg
    if name != "candidate":
        steps.append(TestStep(f"{name} = candidate", counted=False))
    for statement in body:
        code = _statement_source(test, statement)
        if code is None:
            return None
        steps.append(TestStep(code, counted=_is_test(statement)))
    return tuple(steps) if any(step.counted for step in steps) else None


def _is_test(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assert):
        return not (isinstance(statement.test, ast.Constant) and statement.test.value)
    return any(isinstance(node, ast.Assert) for node in ast.walk(statement))


def _can_fail(node: ast.AST) -> bool:
    """Whether ``node`` is an assert that is not always true, or a raise."""
    if isinstance(node, ast.Assert):
        return not (isinstance(node.test, ast.Constant) and node.test.value)
    return isinstance(node, ast.Raise)


def _statement_source(test: str, statement: ast.stmt) -> str | None:
    """The statement's own text dedented to module level, else its unparsed form; None if neither
    compiles at module level."""
    segment = ast.get_source_segment(test, statement, padded=True)
    for code in (textwrap.dedent(segment) if segment else None, ast.unparse(statement)):
        if code is not None and _compiles(code):
            return code
    return None


def _without(test: str, tree: ast.Module, *, drop_check: bool) -> str:
    """``test`` without its top-level ``check(...)`` calls (the harness makes its own) and, if
    ``drop_check``, without the definition of ``check``."""
    lines = test.splitlines(keepends=True)
    for node in reversed(tree.body):
        call = node.value if isinstance(node, ast.Expr) else None
        is_call = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "check"
        is_definition = isinstance(node, ast.FunctionDef) and node.name == "check"
        if is_call or (drop_check and is_definition):
            start = min(
                [node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])]
            )
            end = node.end_lineno or node.lineno
            lines[start - 1 : end] = ["\n"] * (end - start + 1)
    return "".join(lines)


def _compiles(code: str) -> bool:
    try:
        compile(code, "<task>", "exec")  # task data, never executed here
    except (SyntaxError, ValueError):
        return False
    return True


def _text(record: Mapping[str, Any], name: str, where: str) -> str:
    value = record[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty string, got {value!r:.60}")
    return value.replace("\r\n", "\n")
