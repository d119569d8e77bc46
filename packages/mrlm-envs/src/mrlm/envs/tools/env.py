"""``mrlm/ToolUse-v0``: answer questions by calling tools (calculator, search, Python, files)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrlm.envs.core.numbers import finite_float
from mrlm.envs.core.text_env import Feedback, TextEnv
from mrlm.envs.sandbox import Limits, Sandbox
from mrlm.envs.tools.answers import answer_matches
from mrlm.envs.tools.calculator import calculator_tool
from mrlm.envs.tools.calls import (
    DEFAULT_MAX_CALL_CHARS,
    DEFAULT_MAX_CALLS_PER_REPLY,
    extract_final_answer,
    format_tool_response,
    has_tool_call,
    parse_tool_calls,
)
from mrlm.envs.tools.corpus import Corpus, DocumentSource, load_corpus
from mrlm.envs.tools.python_session import PythonSession, python_tool
from mrlm.envs.tools.registry import ToolRegistry, ToolResult, truncate
from mrlm.envs.tools.search import BM25Index, SearchBackend, search_tool
from mrlm.envs.tools.tasks import TOOL_NAMES, ToolTask, available_kinds, generate_task
from mrlm.envs.tools.workspace import Workspace, WorkspaceLimits, files_tool

#: Characters of each tool result kept in ``info["tool_calls"]``.
RECORD_CHARS = 500

SYSTEM_PROMPT = """\
You answer questions with the help of tools.

To call a tool, write a block holding a JSON object with the tool's name and arguments:
<tool_call>{{"name": "calculator", "arguments": {{"expression": "2^10"}}}}</tool_call>
You may write up to {max_calls} such blocks in one reply; they run in order. The next message holds one \
result block per call, in the same order:
<tool_response>{{"name": "calculator", "content": "1024"}}</tool_response>
A failed call gives {{"name": ..., "error": "..."}} instead of "content". Long results are cut, with a \
note saying how much was left out.

When you know the answer, reply with no tool call and put the answer alone in <answer>...</answer>. \
A reply without a tool call is your final answer and ends the episode. You have {max_turns} replies in all.

Available tools:
{tools}"""


@dataclass(frozen=True)
class RewardConfig:
    """The reward terms of :class:`ToolUseEnv` (see its docstring)."""

    correct: float = 1.0
    tool_bonus: float = 0.1
    malformed_penalty: float = 0.05
    over_budget_penalty: float = 0.05
    call_budget: int = 8


class ToolUseEnv(TextEnv):
    """Tool use: the agent answers a question by calling tools over several turns, then answering.

    ## Description
    Each episode draws one task from a seeded generator. Tasks need tools: big arithmetic
    (``calculator`` or ``python``), facts from a document collection of invented subjects
    (``search``), computations that need a program (``python``), data in files placed in the
    episode's workspace (``files`` or ``python``), and a fact to look up and then compute with
    (``search`` then ``calculator`` or ``python``). The agent calls tools by writing
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (up to
    ``max_calls_per_reply`` per reply); the env runs them in order and answers with one
    ``<tool_response>{"name": ..., "content": ...}</tool_response>`` block per call, or
    ``{"name": ..., "error": ...}`` for a failed or malformed call (bad JSON, unknown tool,
    arguments that do not fit the schema, one call too many). A reply with no ``<tool_call>`` is the
    final answer: the text of its last ``<answer>...</answer>`` block, else the whole reply.

    Tools and their limits: ``calculator`` evaluates an expression with an allow-listed ``ast`` walker
    (no ``eval``; bounded length, depth, integer size, factorial); ``search`` ranks the collection with
    BM25 (or a given backend); ``python`` runs code in the sandbox (``mrlm.envs.sandbox``), never in
    this process, with state kept for the episode by replaying earlier cells; ``files`` lists, reads and
    writes files in a fresh temporary directory per episode, refusing ``..``, absolute paths and
    symbolic links. Untrusted text never runs in the env's process.

    ## Action Space
    ``TextSpace``: any ``str`` (the model's reply), at most ``max_action_length`` characters.

    ## Observation Space
    ``TextSpace``: on reset, the question; after a tool turn, the result blocks (joined by newlines,
    followed by a one-line note when a single reply remains); after the final answer, ``"Correct."`` or
    ``"Incorrect."``.

    ## Rewards
    Per step, the sum of:

    | term (``info`` key) | value | when |
    |---|---|---|
    | ``reward_correct`` | ``correct_reward`` (1.0) | the final answer is right |
    | ``reward_tool_use`` | ``tool_bonus`` (0.1) | once per episode, the first successful call of a tool the task needs |
    | ``reward_malformed`` | ``-malformed_penalty`` (0.05) each | calls that are malformed or refused |
    | ``reward_over_budget`` | ``-over_budget_penalty`` (0.05) each | calls beyond ``call_budget`` (8) in the episode |

    Numbers are compared exactly (integers) or within the task's tolerance (rounded decimals); text
    after normalisation (case, punctuation, articles), where up to three filler words or words of the
    question may stand around the expected ones ("the river Tamsel"), but an answer that also names
    another candidate answer of the task (another item name, another answer of the collection, a
    record's ``distractors``) is wrong: a list of candidates scores 0. ``info["tool_calls"]`` lists every call of the
    episode so far (``turn``, ``name``, ``arguments``, ``ok``, ``malformed``, ``result`` cut to 500
    characters); ``info`` also has ``answered``, ``answer``, ``correct``, ``calls`` and
    ``malformed_calls``, and ``expected_answer`` once the agent has answered.

    ## Starting State
    ``reset(seed=s)`` draws the task from ``s`` and opens a fresh workspace (seeded with the task's
    files) and a fresh Python session. ``info["system_prompt"]`` explains the call format and lists the
    tools; ``info["tools"]`` holds their schemas as chat templates take them
    (``tokenizer.apply_chat_template(messages, tools=info["tools"])``); ``info["kind"]`` and
    ``info["expected_tools"]`` describe the task.

    ## Episode End
    - Termination: a final answer (right or wrong), or ``max_turns`` replies given; running out of
      turns without an answer scores 0 for correctness.
    - Truncation: never by the env itself (only by a wrapper such as ``TimeLimit``).

    ``close()`` removes the workspace directory; ``reset`` replaces it.

    ## Arguments
    >>> import gymnasium
    >>> import mrlm.envs
    >>> env = gymnasium.make("mrlm/ToolUse-v0", tools=["calculator"])
    >>> question, info = env.reset(seed=0)
    >>> reply = '<tool_call>{"name": "calculator", "arguments": {"expression": "2^10"}}</tool_call>'
    >>> env.step(reply)[0]
    '<tool_response>{"name": "calculator", "content": "1024"}</tool_response>'
    >>> env.close()

    | argument | default | meaning |
    |---|---|---|
    | ``tools`` | all four | names of the enabled tools; tasks are drawn only from kinds they can solve |
    | ``kinds`` | all | task kinds to draw from (``arithmetic``, ``lookup``, ``program``, ``data``, ``lookup_compute``) |
    | ``max_turns`` | 6 | replies per episode |
    | ``max_calls_per_reply`` | 4 | calls run from one reply; more are refused |
    | ``call_budget`` | 8 | calls per episode before each further call is penalised |
    | ``correct_reward`` | 1.0 | reward of a right final answer |
    | ``tool_bonus`` | 0.1 | reward for the first successful call of a needed tool |
    | ``malformed_penalty`` | 0.05 | penalty per malformed or refused call |
    | ``over_budget_penalty`` | 0.05 | penalty per call beyond ``call_budget`` |
    | ``documents`` | built-in | the search collection: records or a JSONL path (see ``mrlm.envs.tools.corpus``) |
    | ``search_backend`` | BM25 | a ``SearchBackend`` to use instead of BM25 over ``documents`` |
    | ``python_limits`` | ``Limits()`` | sandbox limits of each ``python`` call |
    | ``python_output_chars`` | 2000 | longest ``python`` output returned |
    | ``sandbox`` | shared | the ``Sandbox`` that runs ``python`` calls (default: the process-wide one) |
    | ``workspace_limits`` | ``WorkspaceLimits()`` | bounds of the ``files`` tool |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: first version.
    """

    def __init__(
        self,
        *,
        tools: Sequence[str] | str | None = None,
        kinds: Sequence[str] | None = None,
        max_turns: int = 6,
        max_calls_per_reply: int = DEFAULT_MAX_CALLS_PER_REPLY,
        call_budget: int = 8,
        correct_reward: float = 1.0,
        tool_bonus: float = 0.1,
        malformed_penalty: float = 0.05,
        over_budget_penalty: float = 0.05,
        documents: DocumentSource = None,
        search_backend: SearchBackend | None = None,
        python_limits: Limits | None = None,
        python_output_chars: int = 2000,
        sandbox: Sandbox | None = None,
        workspace_limits: WorkspaceLimits | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns, render_mode=render_mode)
        names = _tool_names(tools)
        if max_calls_per_reply < 1 or call_budget < 0:
            raise ValueError("max_calls_per_reply must be >= 1 and call_budget >= 0")
        self.max_calls_per_reply = max_calls_per_reply
        self.rewards = RewardConfig(
            finite_float("correct_reward", correct_reward),
            finite_float("tool_bonus", tool_bonus),
            finite_float("malformed_penalty", malformed_penalty),
            finite_float("over_budget_penalty", over_budget_penalty),
            call_budget,
        )
        # Lookup tasks come from the documents; a custom backend without documents asks none.
        self.corpus = load_corpus(documents)
        if search_backend is not None and documents is None:
            self.corpus = Corpus(self.corpus.documents, (), ())
        self.kinds = available_kinds(names, self.corpus, kinds)
        if not self.kinds:
            raise ValueError(f"no task kind can be solved with the tools {names} (kinds: {kinds})")

        self.workspace = Workspace(workspace_limits)
        self.python = PythonSession(
            limits=python_limits, output_chars=python_output_chars, workspace=self.workspace, sandbox=sandbox
        )
        backend = search_backend if search_backend is not None else BM25Index(self.corpus.documents)
        available = {
            "calculator": calculator_tool,
            "search": lambda: search_tool(backend),
            "python": lambda: python_tool(self.python),
            "files": lambda: files_tool(self.workspace),
        }
        self.registry = ToolRegistry(available[name]() for name in names)

        self.task: ToolTask | None = None
        self._records: list[dict[str, Any]] = []
        self._calls = 0
        self._malformed = 0
        self._bonus_given = False

    # ----------------------------------------------------------------------------------------------

    @property
    def system_prompt(self) -> str:
        return SYSTEM_PROMPT.format(
            max_calls=self.max_calls_per_reply, max_turns=self.max_turns, tools=self.registry.render()
        )

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        kind = self.kinds[int(rng.integers(len(self.kinds)))]
        self.task = generate_task(rng, kind, self.corpus)
        if "files" in self.registry or "python" in self.registry:
            self.workspace.reset(self.task.files)
        self.python.reset()
        self._records, self._calls, self._malformed, self._bonus_given = [], 0, 0, False
        info = {
            "system_prompt": self.system_prompt,
            "tools": self.registry.specs(),
            "kind": self.task.kind,
            "expected_tools": [name for name in self.task.expected_tools if name in self.registry],
        }
        return self.task.question, info

    def _respond(self, action: str) -> Feedback:
        assert self.task is not None
        if has_tool_call(action):
            return self._tool_turn(action)
        answer = extract_final_answer(action)
        task = self.task
        correct = answer_matches(
            answer,
            task.answer,
            task.answer_type,
            tolerance=task.tolerance,
            aliases=task.aliases,
            distractors=task.distractors,
            question=task.question,
        )
        reward = self.rewards.correct if correct else 0.0
        info = self._info(answered=True, answer=answer, correct=correct, reward_correct=reward)
        info["expected_answer"] = task.answer
        return Feedback("Correct." if correct else "Incorrect.", reward, done=True, info=info)

    def _tool_turn(self, action: str) -> Feedback:
        parsed = parse_tool_calls(
            action, max_calls=self.max_calls_per_reply, max_call_chars=DEFAULT_MAX_CALL_CHARS
        )
        blocks: list[str] = []
        bonus = malformed = over_budget = 0
        for call in parsed:
            if call.name is not None and call.error is None:
                result = self.registry.call(call.name, call.arguments)
            else:
                result = ToolResult(call.name or "", call.arguments, False, call.error or "", malformed=True)
            self._calls += 1
            malformed += result.malformed
            over_budget += self._calls > self.rewards.call_budget
            if result.ok and not self._bonus_given and result.name in self.task_tools:
                self._bonus_given, bonus = True, 1
            blocks.append(format_tool_response(call.name, result.content, ok=result.ok))
            self._records.append(
                {
                    "turn": self.turn,
                    "name": call.name,
                    "arguments": result.arguments,
                    "ok": result.ok,
                    "malformed": result.malformed,
                    "result": truncate(result.content, RECORD_CHARS),
                }
            )
        self._malformed += malformed
        if self.turns_left == 1:
            blocks.append("One reply left: give your final answer in <answer>...</answer>.")
        elif self.turns_left == 0:
            blocks.append("No replies left: the episode ended without an answer.")
        terms = {
            "reward_tool_use": bonus * self.rewards.tool_bonus,
            "reward_malformed": -malformed * self.rewards.malformed_penalty,
            "reward_over_budget": -over_budget * self.rewards.over_budget_penalty,
        }
        info = self._info(answered=False, answer=None, correct=False, reward_correct=0.0, **terms)
        return Feedback("\n".join(blocks), sum(terms.values()), done=False, info=info)

    @property
    def task_tools(self) -> tuple[str, ...]:
        return self.task.expected_tools if self.task is not None else ()

    def _info(self, *, answered: bool, answer: str | None, correct: bool, **rewards: float) -> dict[str, Any]:
        terms = {
            "reward_correct": 0.0,
            "reward_tool_use": 0.0,
            "reward_malformed": 0.0,
            "reward_over_budget": 0.0,
        }
        terms.update(rewards)
        return {
            "answered": answered,
            "answer": answer,
            "correct": correct,
            **terms,
            "tool_calls": self._records,
            "calls": self._calls,
            "malformed_calls": self._malformed,
        }

    def close(self) -> None:
        self.workspace.close()
        super().close()


def _tool_names(tools: Sequence[str] | str | None) -> list[str]:
    if tools is None:
        return list(TOOL_NAMES)
    names = [name.strip() for name in tools.split(",")] if isinstance(tools, str) else list(tools)
    unknown = [name for name in names if name not in TOOL_NAMES]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"tools must be distinct names among {TOOL_NAMES}, got {tools!r}")
    return [name for name in TOOL_NAMES if name in names]
