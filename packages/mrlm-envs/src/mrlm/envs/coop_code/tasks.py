"""What a cooperative coding task is: functions owned by different agents, and tests of the whole."""

from __future__ import annotations

from dataclasses import dataclass

from mrlm.envs.code.tasks import CodeTask


@dataclass(frozen=True)
class Part:
    """One function of the team's program, written by one agent.

    Attributes:
        name: the function's name.
        stub: its signature and docstring as shown to the agent, at column 0; "" when the agent
            chooses the signature itself.
        description: what the function must do, in prose ("" when the stub says it all).
        uses: the names of the other parts this one must call, using what they return.
    """

    name: str
    stub: str = ""
    description: str = ""
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoopTask:
    """A programming task split into parts, one per agent.

    Attributes:
        task_id: unique name of the task.
        description: the whole task in prose, shown to every agent.
        parts: the parts in agent order; the last one is the entry point that the tests call.
        tests: the tests, as ``mrlm/Code-v0`` runs them (its entry point is the last part's name).
        context: code placed before the parts (imports, functions the task gives).
        solution: reference code of each part, in part order, when known (used to test the task).
        source: ``"builtin"``, ``"humaneval"``, ``"coophumaneval"``, ``"mbpp"``, ``"mbpp-sanitized"`` or
            ``"mrlm"`` (parts records).
    """

    task_id: str
    description: str
    parts: tuple[Part, ...]
    tests: CodeTask
    context: str = ""
    solution: tuple[str, ...] | None = None
    source: str = "builtin"

    def __post_init__(self) -> None:
        names = [part.name for part in self.parts]
        if len(names) < 2:
            raise ValueError(f"task {self.task_id!r}: a cooperative task needs at least two parts")
        if len(set(names)) != len(names) or not all(name.isidentifier() for name in names):
            raise ValueError(f"task {self.task_id!r}: part names must be distinct Python names, got {names}")
        for part in self.parts:
            unknown = [name for name in part.uses if name not in names or name == part.name]
            if unknown:
                raise ValueError(f"task {self.task_id!r}: part {part.name!r} uses unknown parts {unknown}")
        if self.tests.entry_point != names[-1]:
            raise ValueError(
                f"task {self.task_id!r}: the tests call {self.tests.entry_point!r}, not the last part {names[-1]!r}"
            )
        if self.solution is not None and len(self.solution) != len(self.parts):
            raise ValueError(f"task {self.task_id!r}: one reference solution per part is needed")

    @property
    def entry_point(self) -> str:
        """The function the tests call: the last part."""
        return self.parts[-1].name


def agent_names(num_agents: int) -> tuple[str, ...]:
    """The agents of a team of ``num_agents``: ``helper``/``main`` for two, else ``helper_1``, ... ``main``.

    Agent ``i`` writes part ``i`` of every task; ``main`` writes the entry point.
    """
    if isinstance(num_agents, bool) or not isinstance(num_agents, int) or num_agents < 2:
        raise ValueError(f"num_agents must be an int of at least 2, got {num_agents!r}")
    if num_agents == 2:
        return ("helper", "main")
    return (*(f"helper_{index}" for index in range(1, num_agents)), "main")
