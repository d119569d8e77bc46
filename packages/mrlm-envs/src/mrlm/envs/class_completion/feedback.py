"""What each agent reads: the class and how the work is split, then after each round the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mrlm.envs.class_completion.assembly import Assembly
from mrlm.envs.class_completion.methods import ReplyCode
from mrlm.envs.class_completion.ownership import Assignment, Round
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.code.execution import Verdict
from mrlm.envs.code.feedback import cut, failure_detail, fenced
from mrlm.envs.core.disclosure import TestDisclosure

SYSTEM_PROMPT = (
    "You are an expert Python programmer in a team that completes one class together; each member "
    "implements some of its methods. Use only the standard library. Reply with your methods in a "
    "single ```python code block."
)

#: Longest module shown in feedback, in characters.
PROGRAM_CHARS = 12_000


def task_text(
    task: ClassTask, agents: Sequence[str], agent: str, assignment: Assignment, owners: Mapping[str, str]
) -> str:
    """The first observation of ``agent``: the class, the split of the work and how to answer."""
    lines = [
        f"You are `{agent}` in a team of {len(agents)} programmers completing the Python class "
        f"`{task.class_name}` together."
    ]
    if task.description:
        lines += ["", task.description]
    lines += ["", "The skeleton:", fenced(task.skeleton), ""]
    if assignment == "env":
        mine = [name for name in task.method_names if owners.get(name) == agent]
        theirs = [f"`{name}` ({owners[name]})" for name in task.method_names if owners.get(name) != agent]
        lines += [
            f"Your methods: {_names(mine) or 'none'}.",
            f"Your teammates' methods: {', '.join(theirs) or 'none'}.",
            "Implement only your own methods: a teammate's method that you implement is dropped and "
            "costs you a penalty.",
        ]
    else:
        lines += [
            f"The team splits the methods ({_names(task.method_names)}) by what it writes: a method "
            "belongs to the first agent that implements it (within one round, to the agent listed first: "
            f"{', '.join(agents)}). Implementing a method a teammate already owns is dropped and costs you "
            "a penalty. Aim for an even split.",
        ]
    lines += [
        "An agent that owns no implemented method is penalised. The team is rewarded for the share of "
        "methods implemented, the share of hidden tests passed, and an even split of the work. The "
        "constructor is given.",
        "Reply with your methods as full definitions (`def name(self, ...):` with a body, inside "
        f"`class {task.class_name}:` or not) in one ```python code block.",
    ]
    return "\n".join(lines)


def round_text(
    task: ClassTask,
    agent: str,
    attempt: int,
    assembly: Assembly,
    verdict: Verdict,
    components: Mapping[str, float],
    penalty: float,
    changes: Round,
    owners: Mapping[str, str],
    implemented: Sequence[str],
    *,
    turns_left: int | None,
    max_chars: int,
    disclosure: TestDisclosure,
) -> str:
    """The observation after a round: the outcome, scores, ownership and, while turns remain, the class
    and a failing test (as ``disclosure`` allows, see :mod:`mrlm.envs.core.disclosure`)."""
    scores = ", ".join(f"{name} {value:.2f}" for name, value in components.items())
    lines = [f"Round {attempt}: {_summary(verdict)} ({scores}); your penalty {penalty:.2f}."]
    if changes.overwrites[agent]:
        lines.append(f"Dropped, owned by a teammate: {_names(changes.overwrites[agent])}.")
    if changes.refused[agent]:
        lines.append(
            f"Dropped: {_names(changes.refused[agent])} (the constructor is given by the task, and a "
            "method's decorators and defaults may not bind other names of the class)."
        )
    status = [
        f"`{name}`: {owners.get(name, 'nobody')}, {'implemented' if name in implemented else 'missing'}"
        for name in task.method_names
    ]
    lines.append("Methods: " + "; ".join(status) + ".")
    if verdict.all_passed:
        return "\n".join(lines)
    if turns_left == 0:
        return "\n".join([*lines, "No rounds left."])
    lines += ["", "The class:", fenced(cut(assembly.source, PROGRAM_CHARS))]
    detail = cut(
        failure_detail(
            verdict, task.test_sources, "the class", lambda line: _where(line, assembly), disclosure
        ),
        max_chars,
    )
    if detail:
        lines += ["", detail]
    lines += [
        "",
        "Reply with new versions of your methods in one ```python code block; methods you do not send "
        "keep their current version.",
    ]
    return "\n".join(lines)


def drafts_text(drafts: Mapping[str, ReplyCode]) -> str:
    """What teammates who already moved this round implemented (turn-based play)."""
    if not drafts:
        return ""
    lines = ["", "Your teammates have already written this round:"]
    for agent, draft in drafts.items():
        methods = draft.implemented
        lines.append(f"- `{agent}`: " + (_names([m.name for m in methods]) if methods else "no method"))
        if methods:
            lines.append(fenced(cut("\n\n".join(m.code for m in methods), PROGRAM_CHARS)))
    return "\n".join(lines)


def _summary(verdict: Verdict) -> str:
    counts = f"{verdict.passed} of {verdict.total} tests passed"
    return {
        "passed": f"all {verdict.total} tests passed",
        "failed": counts,
        "syntax_error": "the class has a syntax error; no test ran",
        "timeout": f"the class ran out of time; {counts}",
        "error": "the class could not be tested",
        "no_code": "no code",
    }[verdict.outcome]


def _where(line: int | None, assembly: Assembly) -> str:
    if line is None:
        return ""
    author = assembly.author(line)
    return f" (line {line}, in a method of `{author}`)" if author else f" (line {line})"


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)
