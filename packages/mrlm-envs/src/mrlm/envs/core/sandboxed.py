"""What every env whose replies run in the sandbox holds: Code-v0, CoopCode-v0 and ClassCompletion-v0.

:class:`Judging` gathers how a reply is run (the limits of one sandboxed run of a reply with its
tests, the time of each test, the sandbox) and how much of a failure is shown. :class:`SandboxedTasks`
keeps the collection of tasks and the task of the episode (chosen by
:func:`~mrlm.envs.core.task_choice.choose_task`), the judging, and two things of the episode: the
score of its last attempt, so that each attempt is paid the change in score and an episode's return
is the score of its last attempt (partial credit cannot be collected once per turn), and the tests
its feedback has quoted, which later attempts are not scored on (:mod:`mrlm.envs.core.disclosure`).
The sandbox never travels: a pickled copy uses the process's shared one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from mrlm.envs.core.disclosure import TestDisclosure
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.sandbox import Limits, Sandbox
from mrlm.envs.sandbox.api import MAX_BYTES, MAX_SECONDS, MIB


@dataclass(frozen=True)
class Judging:
    """How replies are run and reported; the env arguments of the same names.

    Attributes:
        time_limit_s: wall and CPU time of one run of a reply with all its tests (> 0).
        test_time_limit_s: time of each test, and of loading the reply (> 0).
        memory_limit_mb: memory of the process that runs the reply.
        feedback_chars: the longest error detail shown after an attempt (>= 40).
        sandbox: the sandbox that runs the replies; None for the one shared by the process.
    """

    time_limit_s: float = 10.0
    test_time_limit_s: float = 2.0
    memory_limit_mb: int = 512
    feedback_chars: int = 1000
    sandbox: Sandbox | None = None

    def __post_init__(self) -> None:
        for name in ("time_limit_s", "test_time_limit_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value <= MAX_SECONDS):
                raise ValueError(
                    f"{name} must be a number of seconds > 0 and at most {MAX_SECONDS:g}, got {value!r}"
                )
        if (
            isinstance(self.memory_limit_mb, bool)
            or not isinstance(self.memory_limit_mb, int)
            or not 1 <= self.memory_limit_mb <= MAX_BYTES // MIB
        ):
            # Named as the env argument, not as the sandbox's Limits.memory_bytes it becomes.
            raise ValueError(
                f"memory_limit_mb must be an int from 1 to {MAX_BYTES // MIB}, got {self.memory_limit_mb!r}"
            )
        if self.feedback_chars < 40:
            raise ValueError(f"feedback_chars must be at least 40, got {self.feedback_chars}")

    @property
    def limits(self) -> Limits:
        """The sandbox limits of one run of a reply with all its tests."""
        return Limits(
            wall_time_s=float(self.time_limit_s),
            cpu_time_s=float(self.time_limit_s),
            memory_bytes=int(self.memory_limit_mb) * MIB,
            output_bytes=MIB,
        )


class HasTaskId(Protocol):
    @property
    def task_id(self) -> str: ...


TaskT = TypeVar("TaskT", bound=HasTaskId)


class SandboxedTasks(Generic[TaskT]):
    """Tasks whose replies are judged in the sandbox, and the episode's task and score.

    A base class; it passes any other keyword arguments on, so it can stand before another base (as
    in ``class CodeEnv(SandboxedTasks[CodeTask], TextEnv)``).

    Args:
        tasks: the collection, not empty, with distinct ``task_id``.
        judging: how replies are run and reported.
    """

    def __init__(self, tasks: Sequence[TaskT], judging: Judging, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not tasks:
            raise ValueError("no tasks were given")
        self.tasks = tuple(tasks)
        self._positions = {task.task_id: position for position, task in enumerate(self.tasks)}
        if len(self._positions) != len(self.tasks):
            raise ValueError("two tasks share a task_id")
        self.limits = judging.limits
        self.test_time_limit_s = float(judging.test_time_limit_s)
        self.feedback_chars = int(judging.feedback_chars)
        self._sandbox = judging.sandbox
        self.task: TaskT = self.tasks[0]
        self._previous_score = 0.0
        #: The tests the episode's feedback has quoted (see :mod:`mrlm.envs.core.disclosure`).
        self.disclosure = TestDisclosure()

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox that runs the replies: the one given, else the one shared by the process."""
        return self._sandbox if self._sandbox is not None else Sandbox.shared()

    def __getstate__(self) -> dict[str, Any]:
        # A sandbox holds worker processes and cannot travel; a copy uses the shared one.
        state = dict(self.__dict__)
        state["_sandbox"] = None
        return state

    def start_task(self, rng: np.random.Generator, seed: int | None, options: Mapping[str, Any]) -> TaskT:
        """Choose the episode's task (``options["task_id"]``, ``options["index"]``, ``seed % n``, or a
        draw from ``rng``) and forget the last episode's score and quoted tests."""
        self.task = choose_task(self.tasks, self._positions, rng, options, seed=seed)
        self._previous_score = 0.0
        self.disclosure = TestDisclosure()
        return self.task

    def score_change(self, score: float) -> float:
        """The reward of an attempt that scores ``score``: the change since the episode's previous
        attempt (the score itself on the first)."""
        reward = score - self._previous_score
        self._previous_score = score
        return reward
