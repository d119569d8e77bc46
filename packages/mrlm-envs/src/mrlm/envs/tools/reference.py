"""A scripted agent that solves generated tasks with the tools, for examples, tests and demonstrations.

It plays the part of a model that knows *how* to solve each kind of task: it picks the tools the env
enables, writes well-formed calls, and reads its answer from the tool results (the calculator's value,
the program's output, the numbers in a file). For lookups it cannot read prose, so it answers the
task's expected text only when a search result contains it. Transcripts it produces are well-formed
tool-use demonstrations.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Generator
from typing import Any

from mrlm.envs.tools.calls import format_tool_call, parse_tool_responses
from mrlm.envs.tools.tasks import ToolTask

Plan = Generator[str, str, None]


class ReferenceAgent:
    """Replies for one episode of ``mrlm/ToolUse-v0``.

    Args:
        task: the episode's task (``env.unwrapped.task``).
        tools: the tools the env enables.
    """

    def __init__(self, task: ToolTask, tools: Collection[str]) -> None:
        self.task = task
        self.tools = set(tools)
        self._plan = _PLANS[task.kind](self)
        self._started = False

    def act(self, observation: str) -> str:
        """The next reply, given the env's last observation."""
        if not self._started:
            self._started = True
            return next(self._plan)
        try:
            return self._plan.send(observation)
        except StopIteration:
            return answer("I do not know.")

    # ----------------------------------------------------------------------------------------------

    def _compute(self, expression: str) -> Plan:
        """Evaluate an expression with the calculator, else with Python; the value is the answer."""
        if "calculator" in self.tools:
            result = yield format_tool_call("calculator", {"expression": expression})
        else:
            result = yield format_tool_call("python", {"code": f"from math import *\nprint({expression})"})
        yield answer(_content(result))

    def _arithmetic(self) -> Plan:
        yield from self._compute(self.task.metadata["expression"])

    def _program(self) -> Plan:
        result = yield format_tool_call("python", {"code": self.task.metadata["code"]})
        yield answer(_content(result))

    def _lookup(self) -> Plan:
        result = yield format_tool_call("search", {"query": self.task.question})
        found = self.task.answer.casefold() in _content(result).casefold()
        yield answer(self.task.answer if found else "I could not find it.")

    def _lookup_compute(self) -> Plan:
        metadata = self.task.metadata
        result = yield format_tool_call("search", {"query": metadata["phrase"]})
        if str(metadata["value"]) not in _content(result):
            yield answer("I could not find it.")
            return
        yield from self._compute(f"{metadata['value']} * {metadata['k']} + {metadata['c']}")

    def _data(self) -> Plan:
        metadata = self.task.metadata
        if "files" not in self.tools:
            result = yield format_tool_call("python", {"code": metadata["code"]})
            yield answer(_content(result))
            return
        # Two calls in one reply: look around, then read the file.
        result = (
            yield format_tool_call("files", {"operation": "list", "path": "."})
            + "\n"
            + format_tool_call("files", {"operation": "read", "path": metadata["path"]})
        )
        yield answer(_analyse(metadata, _content(result, index=1)))


def _analyse(metadata: dict[str, Any], text: str) -> str:
    """What a model would work out from the file's text."""
    if metadata["template"] == "log_errors":
        return str(sum(1 for line in text.splitlines() if line.split()[2:3] == ["ERROR"]))
    rows = list(csv.DictReader(io.StringIO(text)))
    if metadata["template"] == "total_quantity":
        return str(sum(int(row["quantity"]) for row in rows))
    if metadata["template"] == "region_revenue":
        return str(
            sum(int(r["quantity"]) * int(r["unit_price"]) for r in rows if r["region"] == metadata["region"])
        )
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["item"]] = totals.get(row["item"], 0) + int(row["quantity"])
    return max(totals, key=lambda item: totals[item])


def answer(text: str) -> str:
    """A final-answer reply."""
    return f"<answer>{text}</answer>"


def _content(observation: str, index: int = 0) -> str:
    responses = parse_tool_responses(observation)
    if len(responses) <= index:
        return ""
    response = responses[index]
    return str(response.get("content", response.get("error", "")))


_PLANS = {
    "arithmetic": ReferenceAgent._arithmetic,
    "program": ReferenceAgent._program,
    "lookup": ReferenceAgent._lookup,
    "lookup_compute": ReferenceAgent._lookup_compute,
    "data": ReferenceAgent._data,
}
