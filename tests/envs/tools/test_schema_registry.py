"""Tool schemas are checked when defined, arguments strictly when called; the registry never raises."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from mrlm.envs.tools.registry import Tool, ToolError, ToolRegistry, truncate
from mrlm.envs.tools.schema import SchemaError, check_schema, validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 10},
        "k": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "weight": {"type": "number", "minimum": 0},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
        "inner": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
            "additionalProperties": False,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def test_valid_arguments_are_cleaned() -> None:
    assert validate({"query": "abc"}, SCHEMA) == {"query": "abc", "k": 3}  # default filled in
    cleaned = validate(
        {
            "query": "a",
            "k": 2.0,
            "mode": "slow",
            "weight": 0.5,
            "flag": True,
            "tags": ["x"],
            "inner": {"x": 1},
        },
        SCHEMA,
    )
    assert cleaned["k"] == 2 and isinstance(cleaned["k"], int)
    assert cleaned["inner"] == {"x": 1} and cleaned["tags"] == ["x"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "must be an object, got array"),
        ({}, "missing the required argument 'query'"),
        ({"query": "a", "extra": 1}, "unexpected argument 'extra'"),
        ({"query": "a", "x": 1, "y": 2}, "unexpected arguments 'x', 'y'"),
        ({"query": 5}, "argument 'query' must be a string, got integer"),
        ({"query": ""}, "too short"),
        ({"query": "x" * 11}, "too long (11 characters; at most 10)"),
        ({"query": "a", "k": "3"}, "argument 'k' must be an integer, got string"),
        ({"query": "a", "k": True}, "must be an integer, got boolean"),
        ({"query": "a", "k": 2.5}, "must be an integer, got number"),
        ({"query": "a", "k": 0}, "at least 1"),
        ({"query": "a", "k": 6}, "at most 5"),
        ({"query": "a", "mode": "medium"}, "must be one of 'fast', 'slow'"),
        ({"query": "a", "weight": -1}, "at least 0"),
        ({"query": "a", "weight": float("nan")}, "finite"),
        ({"query": "a", "weight": None}, "must be a number, got null"),
        ({"query": "a", "flag": 1}, "must be true or false"),
        ({"query": "a", "tags": "x"}, "must be an array"),
        ({"query": "a", "tags": ["a", "b", "c"]}, "too many items"),
        ({"query": "a", "tags": ["long"]}, "too long"),
        ({"query": "a", "inner": {}}, "missing the required argument 'x'"),
        ({"query": "a", "inner": {"x": 1, "y": 2}}, "unexpected argument 'y'"),
    ],
)
def test_invalid_arguments_are_refused_readably(arguments: Any, message: str) -> None:
    with pytest.raises(SchemaError) as caught:
        validate(arguments, SCHEMA)
    assert message in str(caught.value)


def test_long_unexpected_names_are_clipped_in_messages() -> None:
    with pytest.raises(SchemaError) as caught:
        validate({"query": "a", "z" * 10_000: 1}, SCHEMA)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "string"}, "must be an 'object' schema"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}, "unsupported"),
        ({"type": "object", "oneOf": []}, "unsupported"),
        ({"type": "object", "properties": {"a": {"type": "date"}}}, "must declare a type"),
        ({"type": "object", "required": ["a"]}, "not among the properties"),
        ({"type": "object", "additionalProperties": True}, "only 'additionalProperties: false'"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "needs 'items'"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": []}}}, "at least one value"),
    ],
)
def test_schemas_outside_the_subset_are_refused(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_schema(schema)


def _echo(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True)


def _fails(arguments: dict[str, Any]) -> str:
    raise ToolError("no luck")


def _crashes(arguments: dict[str, Any]) -> str:
    raise RuntimeError("secret internals")


def _registry() -> ToolRegistry:
    return ToolRegistry(
        [
            Tool("echo", "Echo the arguments.", SCHEMA, _echo),
            Tool("fails", "Always fails.", {"type": "object", "properties": {}}, _fails),
            Tool("crashes", "Has a bug.", {"type": "object"}, _crashes),
        ],
        max_result_chars=50,
    )


def test_registry_specs_are_in_the_chat_template_format() -> None:
    registry = _registry()
    specs = registry.specs()
    assert [spec["function"]["name"] for spec in specs] == ["echo", "fails", "crashes"]
    assert specs[0] == {
        "type": "function",
        "function": {"name": "echo", "description": "Echo the arguments.", "parameters": SCHEMA},
    }
    assert json.loads(registry.render()) == specs
    assert registry.names == ["echo", "fails", "crashes"] and "echo" in registry and len(registry) == 3


def test_registry_calls_never_raise() -> None:
    registry = _registry()
    ok = registry.call("echo", {"query": "hi"})
    assert ok.ok and not ok.malformed and json.loads(ok.content) == {"query": "hi", "k": 3}
    unknown = registry.call("nope", {})
    assert not unknown.ok and unknown.malformed and "unknown tool 'nope'" in unknown.content
    assert "available: echo, fails, crashes" in unknown.content
    invalid = registry.call("echo", {"k": 1})
    assert invalid.malformed and invalid.content.startswith("invalid arguments:")
    failed = registry.call("fails", {})
    assert (failed.ok, failed.malformed, failed.content) == (False, False, "no luck")
    crashed = registry.call("crashes", {})
    assert not crashed.ok and crashed.content == "the tool failed: RuntimeError"  # no internals leak
    long = registry.call("echo", {"query": "abcdefghij", "tags": ["aaa", "bbb"], "mode": "fast"})
    assert long.ok and "more characters not shown" in long.content


def test_tool_definitions_are_checked_and_names_unique() -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool("bad name", "x", {"type": "object"}, _echo)
    with pytest.raises(ValueError, match="already registered"):
        ToolRegistry([Tool("a", "x", {"type": "object"}, _echo), Tool("a", "y", {"type": "object"}, _echo)])
    registry = _registry()
    assert pickle.loads(pickle.dumps(registry)).call("echo", {"query": "q"}).ok


def test_truncate_notes_what_it_cut() -> None:
    assert truncate("abc", 3) == "abc"
    assert truncate("abcdef", 2) == "ab\n[... 4 more characters not shown]"
