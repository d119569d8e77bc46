"""MBPP-format records, full and sanitized.

- Full: ``task_id``, ``text`` (the problem in prose), ``code`` (a reference solution), ``test_list``
  (assert statements), ``test_setup_code`` and ``challenge_test_list`` (more asserts).
- Sanitized: ``source_file``, ``task_id``, ``prompt`` (prose), ``code``, ``test_imports`` (import
  lines the tests need) and ``test_list``.

Every assert of ``test_list`` (and ``challenge_test_list``) is one test. The asserts call the function
by name, which the prose does not give, so the entry point is the first function called in the first
test that the reference code defines (or, without code, that is not a builtin); an ``entry_point``
field overrides it. As in MBPP's own prompts, the agent is shown a test: the first one.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping
from typing import Any

from mrlm.envs.code.tasks import CodeTask, TestStep

FULL_FIELDS = ("task_id", "text", "test_list")
SANITIZED_FIELDS = ("task_id", "prompt", "test_list")


def mbpp_task(record: Mapping[str, Any], where: str) -> CodeTask:
    """A task from an MBPP record (full or sanitized); ``where`` names it in error messages."""
    sanitized = "text" not in record
    text = record["prompt" if sanitized else "text"]
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{where}: field {'prompt' if sanitized else 'text'!r} must be a non-empty string")
    tests = _strings(record, "test_list", where)
    if not tests:
        raise ValueError(f"{where}: test_list is empty")
    if not sanitized:
        tests += _strings(record, "challenge_test_list", where)
    if sanitized:
        setup = "\n".join(_strings(record, "test_imports", where))
    else:
        setup = optional_text(record, "test_setup_code", where)
    for code in (setup, *tests):
        _check_compiles(code, where)
    code = optional_text(record, "code", where)
    entry_point = record.get("entry_point") or _entry_point(tests[0], code, where)
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise ValueError(f"{where}: entry_point {entry_point!r} is not a Python name")

    description = (
        f"{text.strip()}\n\nWrite a Python function named `{entry_point}`. For example, it should pass "
        f"this test:\n\n```python\n{tests[0].strip()}\n```"
    )
    return CodeTask(
        task_id=str(record["task_id"]),
        entry_point=entry_point,
        description=description,
        prompt_code="",
        test_setup=setup,
        steps=tuple(TestStep(test) for test in tests),
        canonical_solution=code or None,
        source="mbpp-sanitized" if sanitized else "mbpp",
    )


def _entry_point(test: str, code: str, where: str) -> str:
    calls = [
        node
        for node in ast.walk(ast.parse(test))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))  # as they read, not breadth-first
    called = list(dict.fromkeys(node.func.id for node in calls if isinstance(node.func, ast.Name)))
    defined: set[str] = set()
    if code:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        defined = {
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
    for name in called:
        if name in defined:
            return name
    for name in called:
        if not hasattr(builtins, name):
            return name
    raise ValueError(f"{where}: cannot tell which function the tests call; add an 'entry_point' field")


def _strings(record: Mapping[str, Any], name: str, where: str) -> list[str]:
    value = record.get(name)
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where}: field {name!r} must be a list of strings")
    return [item.replace("\r\n", "\n") for item in value if item.strip()]


def optional_text(record: Mapping[str, Any], name: str, where: str) -> str:
    """Field ``name`` of ``record`` ("" when absent or null); ValueError naming ``where`` unless a string."""
    value = record.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {name!r} must be a string")
    return value.replace("\r\n", "\n")


def _check_compiles(code: str, where: str) -> None:
    try:
        compile(code, "<task>", "exec")  # task data, never executed here
    except (SyntaxError, ValueError) as error:
        raise ValueError(f"{where}: a test does not compile: {error}") from None
