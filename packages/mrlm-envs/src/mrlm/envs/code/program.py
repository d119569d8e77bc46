"""Turn the code of a reply into the program that is tested: a whole solution, or a completion."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from mrlm.envs.code.extract import defines
from mrlm.envs.code.tasks import CodeTask


@dataclass(frozen=True)
class Program:
    """The solution program sent to the sandbox.

    Attributes:
        source: the program's text.
        line_offset: lines of task code before the reply's code; a program line ``n`` is line
            ``n - line_offset`` of the reply's code.
        mode: ``"definition"`` (the reply stands as a module: task context + reply),
            ``"completion"`` (the reply continues the prompt's code) or ``"code"`` (the reply alone).
    """

    source: str
    line_offset: int
    mode: str

    def reply_line(self, line: int | None) -> int | None:
        """The reply's line number for a program line, or None when it falls in the task's code."""
        if line is None or line <= self.line_offset:
            return None
        return line - self.line_offset


def build_program(task: CodeTask, code: str) -> Program:
    """The program for ``code`` (from :func:`~mrlm.envs.code.extract.extract_code`).

    If the code defines the entry point, or is a module of its own (it opens with imports or
    definitions and has no top-level ``return``/``yield``), it follows the prompt's context (imports,
    helpers) and replaces the prompt's definition. Otherwise, when the task has prompt code, the reply
    is its completion: it is indented as the body of the prompt's last block and appended. Prose tasks
    (MBPP) take the code alone.
    """
    if not task.prompt_code.strip():
        return Program(code, 0, "code")
    if defines(code, task.entry_point) or _is_module(code):
        context = _with_newline(task.context)
        return Program(context + code, _count_lines(context), "definition")
    prompt = _with_newline(task.prompt_code)
    body = textwrap.indent(textwrap.dedent(code), _body_indent(prompt), lambda line: bool(line.strip()))
    return Program(prompt + body, _count_lines(prompt), "completion")


_MODULE_START = re.compile(r"(?:async[ \t]+def|def|class|import|from)[ \t]|@")
_BODY_STATEMENT = re.compile(r"^(?:return|yield)\b", re.MULTILINE)


def _is_module(code: str) -> bool:
    """Whether dedented ``code`` reads as a module rather than a function body."""
    lines = [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and bool(_MODULE_START.match(lines[0])) and not _BODY_STATEMENT.search(code)


def _body_indent(prompt: str) -> str:
    """The indentation of code that continues ``prompt``: that of its last line, one level deeper
    after a line ending in ``:``."""
    lines = [line for line in prompt.splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    indent = last[: len(last) - len(last.lstrip())]
    return indent + "    " if last.rstrip().endswith(":") else indent


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _count_lines(text: str) -> int:
    return text.count("\n")
