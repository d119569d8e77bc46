"""ClassEval-format records: ``task_id``, ``skeleton``, ``test``, ``class_name``, ``methods_info`` and,
optionally, ``import_statement``, ``class_description``, ``solution_code``, ``test_classes``,
``class_constructor`` and ``fields``.

The methods to implement are those of ``methods_info`` (``method_name``, ``method_dependencies`` under
``dependencies``); each must have a stub in the skeleton's class. The tests are the ``unittest``
classes of ``test`` (those of ``test_classes`` when given): every ``test*`` method is one test, run
as ``TestClass("test_name").debug()`` (set-up, test and tear-down, failures raised) in the sandbox
harness, after ``TestClass.setUpClass()``. The ``import_statement`` lines precede the tests, as
ClassEval's own evaluation puts the solution's imports before them.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mrlm.envs.class_completion.source import at_column_zero, first_line, last_line
from mrlm.envs.class_completion.tasks import ClassTask, Layout, Method
from mrlm.envs.code.tasks import CodeTask, TestStep

FIELDS = ("task_id", "skeleton", "test", "class_name", "methods_info")

#: What :func:`load_class_tasks` accepts: a JSONL or JSON path, or records (a list, a Dataset).
ClassSource = str | os.PathLike[str] | Iterable[Mapping[str, Any]]


def load_class_tasks(source: ClassSource) -> tuple[ClassTask, ...]:
    """Tasks from ClassEval records: a JSONL file, a JSON file holding a list, or an iterable of dicts.

    Raises:
        ValueError: a record lacks a field or is inconsistent (naming the record), ids repeat, or
            there are no records.
    """
    tasks = tuple(class_task(record, f"record {index}") for index, record in enumerate(_records(source)))
    if not tasks:
        raise ValueError("no class records were given")
    ids = [task.task_id for task in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("two class records share a task_id")
    return tasks


def class_task(record: object, where: str, *, source: str = "classeval") -> ClassTask:
    """The task of one ClassEval record; ``where`` names it in error messages."""
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a mapping of fields, got {type(record).__name__}")
    missing = [name for name in FIELDS if record.get(name) is None]
    if missing:
        raise ValueError(f"{where}: not a ClassEval record; it lacks {', '.join(missing)}")
    skeleton, test = _text(record, "skeleton", where), _text(record, "test", where)
    class_name = _text(record, "class_name", where)
    infos = record["methods_info"]
    if not isinstance(infos, Sequence) or not infos or not all(isinstance(info, Mapping) for info in infos):
        raise ValueError(f"{where}: methods_info must be a non-empty list of method records")
    names = [str(info.get("method_name", "")) for info in infos]

    skeleton_class = _class(_parse(skeleton, where, "skeleton"), class_name, where, "skeleton")
    stubs = {node.name: node for node in skeleton_class.body if isinstance(node, _FUNCTIONS)}
    absent = [name for name in names if name not in stubs or name == "__init__"]
    if absent:
        raise ValueError(f"{where}: methods {absent} have no stub in the skeleton's class {class_name}")
    solutions = _solutions(record, class_name)
    lines = skeleton.split("\n")
    methods = tuple(
        Method(
            name,
            stub=at_column_zero(lines, stubs[name]),
            depends_on=_dependencies(info, names, name),
            solution=solutions.get(name),
        )
        for name, info in sorted(zip(names, infos, strict=True), key=lambda pair: stubs[pair[0]].lineno)
    )
    layout = Layout(
        stubs=tuple(
            (method.name, first_line(stubs[method.name]), last_line(stubs[method.name])) for method in methods
        ),
        class_end=last_line(skeleton_class),
        indent=" " * stubs[names[0]].col_offset,
    )
    steps, sources = _test_steps(test, record.get("test_classes"), where)
    imports = record.get("import_statement") or []
    if isinstance(imports, str) or not all(isinstance(line, str) for line in imports):
        raise ValueError(f"{where}: import_statement must be a list of strings")
    tests = CodeTask(
        task_id=str(record["task_id"]),
        entry_point=class_name,
        description="",
        prompt_code=skeleton,
        test_setup="\n".join([*imports, test]),
        steps=steps,
        canonical_solution=record.get("solution_code") or None,
        source=source,
    )
    description = ast.get_docstring(skeleton_class) or str(record.get("class_description") or "").strip()
    return ClassTask(
        task_id=str(record["task_id"]),
        class_name=class_name,
        description=description.strip().strip('"').strip(),
        skeleton=skeleton,
        methods=methods,
        layout=layout,
        tests=tests,
        test_sources=sources,
        source=source,
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _test_steps(test: str, wanted: object, where: str) -> tuple[tuple[TestStep, ...], tuple[str, ...]]:
    """One set-up step per test class and one counted step per test method, with their sources."""
    tree = _parse(test, where, "test")
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if isinstance(wanted, Sequence) and not isinstance(wanted, str) and wanted:
        unknown = [name for name in wanted if name not in classes]
        if unknown:
            raise ValueError(f"{where}: test_classes {unknown} are not defined in test")
        chosen = [classes[str(name)] for name in wanted]
    else:
        chosen = [
            node for node in classes.values() if any("TestCase" in ast.unparse(base) for base in node.bases)
        ]
    lines = test.split("\n")
    steps: list[TestStep] = []
    sources: list[str] = []
    for node in chosen:
        steps.append(TestStep(f"{node.name}.setUpClass()", counted=False))
        for method in node.body:
            if isinstance(method, _FUNCTIONS) and method.name.startswith("test"):
                steps.append(TestStep(f"{node.name}({method.name!r}).debug()"))
                sources.append(f"# {node.name}\n{at_column_zero(lines, method)}")
    if not sources:
        raise ValueError(f"{where}: the test code holds no unittest test method")
    return tuple(steps), tuple(sources)


def _solutions(record: Mapping[str, Any], class_name: str) -> dict[str, str]:
    """Each method of the record's ``solution_code``, at column 0 ({} without a usable solution)."""
    code = record.get("solution_code")
    if not isinstance(code, str):
        return {}
    try:
        tree = ast.parse(code)  # task data, not model output; parsed only
    except (SyntaxError, ValueError):
        return {}
    found = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    if not found:
        return {}
    lines = code.split("\n")
    return {node.name: at_column_zero(lines, node) for node in found[0].body if isinstance(node, _FUNCTIONS)}


def _dependencies(info: Mapping[str, Any], names: list[str], name: str) -> tuple[str, ...]:
    dependencies = info.get("dependencies")
    listed = dependencies.get("method_dependencies") if isinstance(dependencies, Mapping) else None
    if not isinstance(listed, Sequence) or isinstance(listed, str):
        return ()
    return tuple(str(other) for other in listed if other in names and other != name)


def _class(tree: ast.Module, name: str, where: str, field: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise ValueError(f"{where}: the {field} defines no class {name!r}")


def _parse(code: str, where: str, field: str) -> ast.Module:
    try:
        return ast.parse(code)  # task data, parsed only
    except (SyntaxError, ValueError) as error:
        raise ValueError(f"{where}: the {field} does not parse: {error}") from None


def _text(record: Mapping[str, Any], name: str, where: str) -> str:
    value = record[name]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty string")
    return value.replace("\r\n", "\n")


def _records(source: ClassSource) -> list[object]:
    if isinstance(source, (str, os.PathLike)):
        text = Path(source).read_text(encoding="utf-8")
        if text.lstrip().startswith("["):  # ClassEval ships one JSON list
            records = json.loads(text)
            if not isinstance(records, list):
                raise ValueError(f"{source}: expected a JSON list of records")
            return records
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(source, Mapping):
        raise ValueError("expected records, got a mapping (a DatasetDict?); pick a split")
    return [dict(record) if isinstance(record, Mapping) else record for record in source]
