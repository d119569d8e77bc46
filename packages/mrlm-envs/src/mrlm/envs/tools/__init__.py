"""Tools for LLM agents and ``mrlm/ToolUse-v0``, the environment that teaches their use.

The tools (``calculator``, ``search``, ``python``, ``files``) are usable on their own through a
:class:`ToolRegistry`; :class:`ToolUseEnv` puts them behind the ``<tool_call>`` protocol of
:mod:`mrlm.envs.tools.calls`.
"""

from mrlm.envs.tools.calculator import CalculatorError, calculator_tool, evaluate
from mrlm.envs.tools.calls import (
    ParsedCall,
    extract_final_answer,
    format_tool_call,
    format_tool_response,
    parse_tool_calls,
    parse_tool_responses,
)
from mrlm.envs.tools.corpus import Corpus, load_corpus
from mrlm.envs.tools.env import ToolUseEnv
from mrlm.envs.tools.python_session import PythonSession, python_tool
from mrlm.envs.tools.registry import Tool, ToolError, ToolRegistry, ToolResult
from mrlm.envs.tools.search import BM25Index, Document, SearchBackend, search_tool
from mrlm.envs.tools.tasks import KINDS, TOOL_NAMES, ToolTask, generate_task
from mrlm.envs.tools.workspace import Workspace, WorkspaceLimits, files_tool

__all__ = [
    "KINDS",
    "TOOL_NAMES",
    "BM25Index",
    "CalculatorError",
    "Corpus",
    "Document",
    "ParsedCall",
    "PythonSession",
    "SearchBackend",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolTask",
    "ToolUseEnv",
    "Workspace",
    "WorkspaceLimits",
    "calculator_tool",
    "evaluate",
    "extract_final_answer",
    "files_tool",
    "format_tool_call",
    "format_tool_response",
    "generate_task",
    "load_corpus",
    "parse_tool_calls",
    "parse_tool_responses",
    "python_tool",
    "search_tool",
]
