"""Tools an agent may call: their schemas, the prompt listing, and validated, never-raising calls."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mrlm.envs.tools.schema import SchemaError, check_schema, validate

#: Tool names as chat templates accept them.
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")

#: Longest tool result kept, in characters; each tool usually cuts its output well before this.
DEFAULT_MAX_RESULT_CHARS = 8000


class ToolError(Exception):
    """A tool could not do what was asked; the message is shown to the model as the call's error."""


@dataclass(frozen=True)
class Tool:
    """A function the agent may call.

    Attributes:
        name: what the agent writes in a call (letters, digits, ``_`` and ``-``).
        description: what the tool does and its limits, shown to the model.
        parameters: a JSON-schema ``object`` describing the arguments (see :mod:`.schema`).
        function: takes the validated arguments and returns the result text; raises
            :class:`ToolError` for a failure the model should read. It must be picklable (a module
            function or a bound method) so that environments holding it can be copied.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[[dict[str, Any]], str] = field(compare=False)

    def __post_init__(self) -> None:
        if not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match {NAME_PATTERN.pattern}")
        check_schema(self.parameters)

    def spec(self) -> dict[str, Any]:
        """The chat-template form: ``{"type": "function", "function": {name, description, parameters}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one call.

    Attributes:
        name: the tool called.
        arguments: the arguments after validation (defaults filled in), or as given when invalid.
        ok: the tool ran and succeeded.
        content: the result text when ``ok``, else the error message.
        malformed: the call itself was invalid (unknown tool, arguments not matching the schema), as
            opposed to a valid call that failed (division by zero, a missing file).
    """

    name: str
    arguments: Any
    ok: bool
    content: str
    malformed: bool = False


class ToolRegistry:
    """An ordered set of tools with unique names.

    Args:
        tools: the tools, in the order they are listed to the model.
        max_result_chars: results longer than this are cut, with a note saying so.
    """

    def __init__(self, tools: Iterable[Tool] = (), *, max_result_chars: int = DEFAULT_MAX_RESULT_CHARS):
        self.max_result_chars = max_result_chars
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """The tool list for ``tokenizer.apply_chat_template(tools=...)``."""
        return [tool.spec() for tool in self]

    def render(self) -> str:
        """The tool list as JSON text, one tool per line, for a system prompt."""
        return "[\n" + ",\n".join(json.dumps(spec, ensure_ascii=False) for spec in self.specs()) + "\n]"

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Validate and run one call. Never raises: every failure becomes an error result."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            shown = name if len(name) <= 64 else name[:61] + "..."
            return ToolResult(name, arguments, False, f"unknown tool '{shown}' (available: {known})", True)
        try:
            cleaned = validate(arguments, tool.parameters)
        except SchemaError as error:
            return ToolResult(name, arguments, False, f"invalid arguments: {error}", True)
        try:
            content = tool.function(cleaned)
        except ToolError as error:
            return ToolResult(name, cleaned, False, self._cut(str(error)))
        except Exception as error:  # a tool bug must not end the episode; the model sees a plain error
            return ToolResult(name, cleaned, False, f"the tool failed: {type(error).__name__}")
        return ToolResult(name, cleaned, True, self._cut(content))

    def _cut(self, text: str) -> str:
        return truncate(text, self.max_result_chars)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters plus a note of how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"
