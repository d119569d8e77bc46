"""Test the team's program in the sandbox and score it from its components.

The program runs in the sandbox through the harness of ``mrlm/Code-v0`` (one execution, each test
separately, in a process apart from the one that runs the tests); nothing of it runs in this process. Two cases are
settled without running it: a program that does not parse (a syntax error) and one that never binds
the entry point (every test fails with a NameError).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mrlm.envs.code.execution import TestResult, Verdict, judge
from mrlm.envs.code.program import Program
from mrlm.envs.coop_code.assembly import Assembly, Contribution
from mrlm.envs.coop_code.syntax import binds_any
from mrlm.envs.coop_code.tasks import CoopTask
from mrlm.envs.coop_code.usage import Usage, usage
from mrlm.envs.core.weights import component_weights
from mrlm.envs.sandbox import Limits, Sandbox

#: The reward components, each in [0, 1].
COMPONENTS = ("defined", "compiles", "tests", "uses")

#: The default weight of each component; they sum to 1, so a perfect attempt scores 1.
DEFAULT_WEIGHTS: Mapping[str, float] = {"defined": 0.1, "compiles": 0.1, "tests": 0.5, "uses": 0.3}

#: Longest error message kept per test, in characters.
ERROR_CHARS = 300


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """The weights of every component: ``weights`` over the defaults. Raises ValueError on an unknown
    component or a negative or non-finite weight."""
    return component_weights(weights, DEFAULT_WEIGHTS)


def run_tests(
    assembly: Assembly,
    task: CoopTask,
    sandbox: Sandbox,
    limits: Limits,
    *,
    step_time_limit_s: float,
) -> Verdict:
    """The verdict of the team's program on the task's tests."""
    total = len(task.tests.tests)
    tree, error = _parse(assembly.source)
    if error is not None:
        text = error.text.rstrip("\n") if isinstance(error.text, str) else None
        return Verdict("syntax_error", (), total, None, f"SyntaxError: {error.msg}", error.lineno, text)
    if tree is None or not any(binds_any(statement, (task.entry_point,)) for statement in tree.body):
        missing = TestResult(False, f"NameError: the team's program does not define {task.entry_point!r}")
        return Verdict("failed", (missing,) * total, total)
    program = Program(assembly.source, 0, "definition")
    return judge(
        program, task.tests, sandbox, limits, step_time_limit_s=step_time_limit_s, error_chars=ERROR_CHARS
    )


@dataclass(frozen=True)
class Components:
    """The parts of the team's score, each in [0, 1].

    Attributes:
        defined: the share of parts whose owner's code defines them.
        compiles: 1 when every part is defined and the program compiles, else 0.
        tests: the share of tests passed.
        uses: the share of required calls (a part calling a teammate's part) that are really made:
            the callee is defined and its result used (see :mod:`mrlm.envs.coop_code.usage`); 1 when
            the task requires none.
        usages: how each part uses each part it must use, keyed ``"caller -> callee"``.
    """

    defined: float
    compiles: float
    tests: float
    uses: float
    usages: Mapping[str, Usage]

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in COMPONENTS}

    def score(self, weights: Mapping[str, float]) -> float:
        """The weighted sum of the components."""
        return sum(weights[name] * value for name, value in self.as_dict().items())


def components(
    task: CoopTask, contributions: Sequence[Contribution], verdict: Verdict, scored_fraction: float
) -> Components:
    """The components of one attempt; ``contributions`` are in part order; ``scored_fraction``: the
    share of the tests not yet quoted in feedback that passed (see :mod:`mrlm.envs.core.disclosure`)."""
    defined = {contribution.part: contribution.defined for contribution in contributions}
    usages: dict[str, Usage] = {}
    for part, contribution in zip(task.parts, contributions, strict=True):
        tree = contribution.tree if contribution.defined else None
        for callee in part.uses:
            found = usage(tree, part.name, callee)
            # A missing caller says more than a missing callee; a callee must exist to be used.
            missing_callee = found != "not_defined" and not defined[callee]
            usages[f"{part.name} -> {callee}"] = "helper_not_defined" if missing_callee else found
    compiles = all(defined.values()) and verdict.outcome != "syntax_error"
    used = [found == "used" for found in usages.values()]
    return Components(
        defined=sum(defined.values()) / len(defined),
        compiles=1.0 if compiles else 0.0,
        tests=scored_fraction if verdict.outcome in ("passed", "failed", "timeout") else 0.0,
        uses=sum(used) / len(used) if used else 1.0,
        usages=usages,
    )


def _parse(source: str) -> tuple[ast.Module | None, SyntaxError | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source), None
        except SyntaxError as error:
            return None, error
        except (ValueError, RecursionError, MemoryError, OverflowError) as error:
            return None, SyntaxError(f"the program cannot be parsed: {type(error).__name__}")
