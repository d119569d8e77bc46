"""What the agent reads: the task, and after each reply a judgement it can debug from."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from mrlm.envs.code.execution import Verdict
from mrlm.envs.code.program import Program
from mrlm.envs.code.tasks import CodeTask
from mrlm.envs.core.disclosure import UNQUOTED_FAILURE, TestDisclosure

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Solve the task with correct, efficient Python using only the "
    "standard library. Reply with your complete solution in a single ```python code block."
)


def task_text(task: CodeTask) -> str:
    """The first observation of an episode: the task, with how to answer."""
    parts = [task.description] if task.description else []
    if task.prompt_code.strip():
        parts.append(
            "Complete the following Python code. Reply with the full implementation of "
            f"`{task.entry_point}` in a ```python code block.\n\n```python\n{task.prompt_code.rstrip()}\n```"
        )
    else:
        parts.append("Reply with your code in a ```python code block.")
    return "\n\n".join(parts)


def judgement_text(
    verdict: Verdict,
    program: Program | None,
    tests: tuple[str, ...],
    *,
    turns_left: int,
    max_chars: int,
    disclosure: TestDisclosure,
) -> str:
    """The observation after a reply.

    It gives the outcome and the number of tests passed. While turns remain it adds what to fix: the
    syntax error, the loading error, or a failing test with its error (as ``disclosure`` allows; see
    :mod:`mrlm.envs.core.disclosure`), cut to ``max_chars`` characters. Once the episode is over the
    tests stay hidden.
    """
    summary = _summary(verdict)
    if verdict.outcome == "passed":
        return summary
    if turns_left <= 0:
        return f"{summary} No attempts left."
    detail = _detail(verdict, program, tests, disclosure)
    if len(detail) > max_chars:
        cut = "\n[... truncated]"
        detail = detail[: max(0, max_chars - len(cut))].rstrip() + cut
    closing = "Fix the code and reply with the complete corrected solution in a ```python code block."
    return f"{summary}\n\n{detail}\n\n{closing}" if detail else f"{summary}\n\n{closing}"


def _summary(verdict: Verdict) -> str:
    counts = f"{verdict.passed} of {verdict.total} tests passed."
    return {
        "passed": f"All {verdict.total} tests passed.",
        "failed": counts,
        "syntax_error": "Your code has a syntax error; no test ran.",
        "timeout": "Your code ran out of time." + (f" {counts}" if verdict.results else ""),
        "error": "Your code could not be tested.",
        "no_code": "No code found in your reply. Put your solution in a ```python code block.",
    }[verdict.outcome]


def _detail(
    verdict: Verdict, program: Program | None, tests: tuple[str, ...], disclosure: TestDisclosure
) -> str:
    where = _where(verdict.line, program)
    if verdict.outcome == "syntax_error":
        shown = f"\n    {verdict.source_line.strip()}" if verdict.source_line else ""
        return f"{_relative_lines(verdict.message, program)}{where}{shown}"
    if verdict.outcome in ("error", "timeout") and not verdict.results:
        return f"Error while running your code{where}: {verdict.message}"
    return _failing_test(verdict, tests, disclosure, lambda line: _where(line, program))


def _where(line: int | None, program: Program | None) -> str:
    reply_line = program.reply_line(line) if program is not None else None
    return f" (line {reply_line} of your code)" if reply_line is not None else ""


def _relative_lines(message: str, program: Program | None) -> str:
    """Python's messages name program lines ("detected at line 9"); name the reply's lines instead."""

    def relative(match: re.Match[str]) -> str:
        line = program.reply_line(int(match.group(1))) if program is not None else None
        return f"line {line}" if line is not None else match.group(0)

    return re.sub(r"\bline (\d+)", relative, message)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# Shared with the team envs, whose programs are assembled from several agents' code ---------------------


def fenced(code: str) -> str:
    """``code`` in a python block."""
    return f"```python\n{code.rstrip()}\n```"


def cut(text: str, limit: int) -> str:
    """``text``, ending in a mark where it is cut to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    mark = "\n[... cut]"
    return text[: max(0, limit - len(mark))].rstrip() + mark


def failure_detail(
    verdict: Verdict,
    tests: Sequence[str],
    subject: str,
    where: Callable[[int | None], str],
    disclosure: TestDisclosure,
) -> str:
    """What to fix after a failed run of ``subject`` ("the program"): the syntax error, the error
    raised while loading it, or a failing test of ``tests`` with its error, as ``disclosure`` allows
    (see :mod:`mrlm.envs.core.disclosure`); empty when nothing failed. ``where(line)`` says where a
    line is (`` (line 3, in the code of `helper`)``)."""
    if verdict.outcome == "syntax_error":
        shown = f"\n    {verdict.source_line.strip()}" if verdict.source_line else ""
        return f"{verdict.message}{where(verdict.line)}{shown}"
    if verdict.outcome in ("error", "timeout") and not verdict.results:
        return f"Error while loading {subject}{where(verdict.line)}: {verdict.message}"
    return _failing_test(verdict, tests, disclosure, where)


def _failing_test(
    verdict: Verdict, tests: Sequence[str], disclosure: TestDisclosure, where: Callable[[int | None], str]
) -> str:
    """A failing test with its error, as ``disclosure`` allows; empty when every test passed."""
    if all(result.passed for result in verdict.results):
        return ""
    index = disclosure.failing_test_to_quote(verdict)
    if index is None:
        return UNQUOTED_FAILURE
    result = verdict.results[index]
    test = tests[index].rstrip() if index < len(tests) else "?"
    return f"Failing test:\n{_indent(test)}\nError{where(result.line)}: {result.error or 'failed'}"
