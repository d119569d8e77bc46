"""What a class-completion task is: a class skeleton whose methods are to be written, and its tests."""

from __future__ import annotations

from dataclasses import dataclass

from mrlm.envs.code.tasks import CodeTask


@dataclass(frozen=True)
class Method:
    """One method of the skeleton to implement.

    Attributes:
        name: the method's name.
        stub: its signature and docstring as in the skeleton, at column 0.
        depends_on: the other methods of the class it calls (ClassEval's ``method_dependencies``).
        solution: a reference implementation at column 0, when the record has one.
    """

    name: str
    stub: str
    depends_on: tuple[str, ...] = ()
    solution: str | None = None


@dataclass(frozen=True)
class Layout:
    """Where the stubs lie in the skeleton (1-based lines), for assembling the class.

    Attributes:
        stubs: ``(method, first line, last line)`` of each stub, in line order.
        class_end: the last line of the class.
        indent: the indentation of the class body.
    """

    stubs: tuple[tuple[str, int, int], ...]
    class_end: int
    indent: str


@dataclass(frozen=True)
class ClassTask:
    """A class to complete, whatever record it came from.

    Attributes:
        task_id: unique name of the task.
        class_name: the class.
        description: the class in prose (its docstring).
        skeleton: the module the agents see: imports and the class, with a stub for each method.
        methods: the methods to implement, in skeleton order (the constructor is given, not one of them).
        layout: where the stubs lie in ``skeleton``.
        tests: the tests as the sandbox harness runs them: one counted step per unittest test method.
        test_sources: the source of each counted test, shown in feedback.
        source: ``"builtin"`` or ``"classeval"``.
    """

    task_id: str
    class_name: str
    description: str
    skeleton: str
    methods: tuple[Method, ...]
    layout: Layout
    tests: CodeTask
    test_sources: tuple[str, ...]
    source: str = "classeval"

    def __post_init__(self) -> None:
        if not self.methods:
            raise ValueError(f"task {self.task_id!r} has no method to implement")
        if len(self.test_sources) != len(self.tests.tests):
            raise ValueError(f"task {self.task_id!r}: one test source per test is needed")

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(method.name for method in self.methods)
