"""What each agent reads: its part of the task, then after each attempt what the team's program did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mrlm.envs.code.execution import Verdict
from mrlm.envs.code.feedback import cut, failure_detail, fenced
from mrlm.envs.coop_code.assembly import Assembly, Contribution
from mrlm.envs.coop_code.judging import Components
from mrlm.envs.coop_code.tasks import CoopTask, Part
from mrlm.envs.core.disclosure import TestDisclosure

SYSTEM_PROMPT = (
    "You are an expert Python programmer in a team that writes one program together; each member "
    "writes one function. Use only the standard library. Reply with your function in a single "
    "```python code block."
)

#: Longest program shown in feedback, in characters.
PROGRAM_CHARS = 12_000

_USAGE_NOTES = {
    "not_called": "`{caller}` never calls `{callee}`.",
    "result_ignored": "`{caller}` calls `{callee}` but never uses what it returns.",
    "wrapper": "`{caller}` only forwards its input to `{callee}`: it must do part of the work itself.",
    "helper_not_defined": "`{caller}` needs `{callee}`, which is not defined.",
}


def task_text(task: CoopTask, agents: Sequence[str], agent: str) -> str:
    """The first observation of ``agent``: the task, its own part and its teammates' parts."""
    index = list(agents).index(agent)
    part = task.parts[index]
    owners = dict(zip((p.name for p in task.parts), agents, strict=True))
    lines = [
        f"You are `{agent}` in a team of {len(agents)} programmers writing one Python program together; "
        "each of you writes one function of it."
    ]
    if task.description:
        lines += ["", f"Task: {task.description}"]
    if task.context.strip():
        lines += ["", "The program starts with this code:", fenced(task.context)]
    lines += ["", f"Your part: the function `{part.name}`.", *_part_lines(part, owners)]
    lines += ["", "Your teammates write:"]
    for other, owner in zip(task.parts, agents, strict=True):
        if owner != agent:
            lines += [f"- `{owner}` writes `{other.name}`.", *_part_lines(other, owners)]
    lines += [
        "",
        "Write only your own function (and any imports or private helpers it needs): a definition of a "
        "teammate's function is dropped from the program. The team shares one reward: every function "
        "defined, the program compiling, the hidden tests passing, and each function really using the "
        "teammates' functions it must call.",
        f"Reply with `{part.name}` in one ```python code block.",
    ]
    return "\n".join(lines)


def attempt_text(
    task: CoopTask,
    agent: str,
    attempt: int,
    assembly: Assembly,
    contributions: Sequence[Contribution],
    verdict: Verdict,
    parts: Components,
    *,
    turns_left: int | None,
    max_chars: int,
    disclosure: TestDisclosure,
) -> str:
    """The observation after an attempt: the outcome, what to fix (a failing test as ``disclosure``
    allows), and the program while turns remain."""
    summary = f"Attempt {attempt}: {_summary(verdict)} " + _scores(parts)
    notes = _notes(task, contributions, parts.usages)
    if verdict.all_passed:
        return "\n".join([summary, *notes])
    if turns_left == 0:
        return "\n".join([summary, *notes, "No attempts left."])
    own = next(c.part for c in contributions if c.agent == agent)
    detail = cut(
        failure_detail(
            verdict, task.tests.tests, "the program", lambda line: _where(line, assembly), disclosure
        ),
        max_chars,
    )
    lines = [summary, *notes, "", "The team's program:", fenced(cut(assembly.source, PROGRAM_CHARS))]
    if detail:
        lines += ["", detail]
    lines += ["", f"Reply with the new version of your function `{own}` in one ```python code block."]
    return "\n".join(lines)


def drafts_text(drafts: Mapping[str, Contribution]) -> str:
    """What teammates who already moved this round wrote (turn-based play), to append to a text."""
    if not drafts:
        return ""
    lines = ["", "Your teammates have already written this round:"]
    for agent, draft in drafts.items():
        code = draft.code.strip()
        lines += [
            f"- `{agent}` ({draft.part}):",
            fenced(cut(code, PROGRAM_CHARS)) if code else "  (no code)",
        ]
    return "\n".join(lines)


def _part_lines(part: Part, owners: Mapping[str, str]) -> list[str]:
    lines = [fenced(part.stub)] if part.stub.strip() else []
    if part.description:
        lines.append(part.description)
    if part.uses:
        named = ", ".join(f"`{name}` (by `{owners[name]}`)" for name in part.uses)
        lines.append(f"`{part.name}` must call {named} and use the result.")
    return lines


def _summary(verdict: Verdict) -> str:
    counts = f"{verdict.passed} of {verdict.total} tests passed."
    return {
        "passed": f"all {verdict.total} tests passed.",
        "failed": counts,
        "syntax_error": "the program has a syntax error; no test ran.",
        "timeout": "the program ran out of time. " + counts,
        "error": "the program could not be tested.",
        "no_code": "no code.",
    }[verdict.outcome]


def _scores(parts: Components) -> str:
    values = ", ".join(f"{name} {value:.2f}" for name, value in parts.as_dict().items())
    return f"({values})"


def _notes(task: CoopTask, contributions: Sequence[Contribution], usages: Mapping[str, str]) -> list[str]:
    notes = []
    for contribution in contributions:
        if not contribution.code.strip():
            notes.append(f"`{contribution.agent}` wrote no code.")
        elif not contribution.parses:
            notes.append(f"The code of `{contribution.agent}` has a syntax error.")
        elif not contribution.defined:
            notes.append(f"The code of `{contribution.agent}` does not define `{contribution.part}`.")
        if contribution.dropped:
            names = ", ".join(f"`{name}`" for name in contribution.dropped)
            notes.append(
                f"`{contribution.agent}` defined {names}, owned by a teammate: that code was dropped."
            )
    for key, found in usages.items():
        caller, _, callee = key.partition(" -> ")
        if found in _USAGE_NOTES:
            notes.append(_USAGE_NOTES[found].format(caller=caller, callee=callee))
    return notes


def _where(line: int | None, assembly: Assembly) -> str:
    if line is None:
        return ""
    author = assembly.author(line)
    return f" (line {line}, in the code of `{author}`)" if author else f" (line {line})"
