"""``mrlm/Code-v0``: write Python that passes hidden tests, run in the sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mrlm.envs.code.execution import Verdict, judge
from mrlm.envs.code.extract import extract_code
from mrlm.envs.code.feedback import SYSTEM_PROMPT, judgement_text, task_text
from mrlm.envs.code.problems import builtin_tasks
from mrlm.envs.code.program import Program, build_program
from mrlm.envs.code.records import TaskSource, check_unique, load_tasks
from mrlm.envs.code.tasks import CodeTask
from mrlm.envs.core.numbers import finite_float
from mrlm.envs.core.sandboxed import Judging, SandboxedTasks
from mrlm.envs.core.text_env import Feedback, TextEnv
from mrlm.envs.sandbox import Sandbox

#: Longest error message kept per test, in characters.
ERROR_CHARS = 300


class CodeEnv(SandboxedTasks[CodeTask], TextEnv):
    """Code generation: the agent reads a programming task and replies with Python that is tested.

    ## Description
    Each episode is one task: a function (or class) to write, given as a signature with a docstring
    (the 27 built-in problems, MRLM and HumanEval records) or in prose (MBPP records). The reply's code is
    taken from its last ```python fenced block (the last one defining the entry point, when several
    do), or the whole reply when it has no fence. A reply that defines the entry point replaces the
    prompt's definition; otherwise it is taken as the body that completes the prompt. The code and
    the task's tests run in the sandbox, in one separate execution per reply, never in this process:
    each test separately, with its own time limit, so that a pass fraction exists. Inside that
    execution the tests and the reply's code run in two processes that exchange only plain values
    (numbers, strings, lists, dicts, ...; other objects stay with the code as handles): the reward
    depends only on what the code computes. It cannot read the tests (they are not in its process,
    its files or its inputs), reach the process that runs them or write the result, and an object
    that claims to equal anything, to be true, or to differ from the answer by zero passes no test
    that expects a value, while ``2.0`` still passes for ``2``, a ``defaultdict`` for a ``dict`` and
    a namedtuple for a tuple (see ``mrlm.envs.code._harness``). The sandbox shows the code the
    interpreter and its standard library, not the project's files or the task data.

    ## Action Space
    ``TextSpace``: any ``str`` (the model's reply), at most ``max_action_length`` characters (65536);
    that bound also caps the code sent to the sandbox. Nothing of the reply is parsed or compiled in
    this process: syntax errors are found in the sandbox.

    ## Observation Space
    ``TextSpace``: on reset, the task and how to answer. After a reply, the judgement: how many tests
    passed and, while turns remain, what to fix: the syntax error (line and message), the error
    raised while loading, or a failing test with its error, cut to ``feedback_chars``. A test quoted
    once is quoted again while it fails; a new one only while another test stays unquoted, else the
    feedback says only that a test not shown failed (see ``Rewards``).

    ## Rewards
    A reply's score depends on its outcome (``info["outcome"]``):

    | outcome | when | score |
    |---|---|---|
    | ``passed`` | every test passed | ``1 + all_pass_bonus`` |
    | ``failed`` | the tests ran, some failed | ``passed / total``, a test quoted in earlier feedback counted as failed |
    | ``syntax_error`` | the code does not compile | ``syntax_error_reward`` |
    | ``timeout`` | the code or a test ran out of time | ``timeout_reward`` |
    | ``error`` | crash while loading, memory limit, forged or missing results | ``error_reward`` |
    | ``no_code`` | the reply holds no code | ``no_code_reward`` |

    The reward of a reply is its score minus the score of the previous reply of the episode (0 for
    the first), so an episode's return is the score of its last reply: partial credit cannot be
    collected once per turn. With ``max_turns=1`` the reward is the score. A test that the feedback
    quoted (its input and expected value) counts as failed in later replies' pass fraction until a
    reply passes every test, and one test at least is never quoted: returning the quoted answers
    earns nothing, the same code sent again never scores more, and ``passed`` takes a test the agent
    never read (``mrlm.envs.core.disclosure``). ``info`` carries the score
    and its parts (``score``, ``reward_pass``, ``reward_bonus``, ``reward_outcome``), ``outcome``,
    ``passed``, ``total``, ``pass_fraction`` (over all tests), ``all_passed``, ``results`` (one
    ``{"passed", "error", "timed_out"}`` per test), ``quoted_tests`` (the indices of the tests quoted
    so far, this reply's feedback included), ``sandbox_status`` and ``message``.

    ## Starting State
    ``reset(seed=s)`` serves task ``s % n`` of the ``n`` tasks, so the same seed always gives the same
    task and seeds ``0 .. n-1`` visit each once; ``reset()`` without a seed draws one from the env's
    seeded generator. ``options={"task_id": ...}`` or ``options={"index": i}`` picks one. ``info`` holds
    ``system_prompt``, ``task_id``, ``entry_point``, ``source`` and ``num_tests``.

    ## Episode End
    - Termination: every test passes, or ``max_turns`` replies have been given.
    - Truncation: never by the env itself (only by a wrapper such as ``TimeLimit``).

    ## Arguments
    >>> import gymnasium
    >>> import mrlm.envs
    >>> env = gymnasium.make("mrlm/Code-v0", max_turns=3, all_pass_bonus=0.5)
    >>> observation, info = env.reset(seed=0)

    | argument | default | meaning |
    |---|---|---|
    | ``records`` | ``None`` | built-in problems; or MRLM (the built-ins' format, see ``mrlm.envs.code.native``)/HumanEval/MBPP records (a list of dicts, a JSONL path or a Dataset), or ``CodeTask`` objects |
    | ``max_turns`` | 1 | replies allowed; after a failing one the agent sees what failed and may retry |
    | ``all_pass_bonus`` | 0.0 | added to the score when every test passes |
    | ``syntax_error_reward`` | 0.0 | score of code that does not compile |
    | ``timeout_reward`` | 0.0 | score of code that runs out of time |
    | ``error_reward`` | 0.0 | score of code that crashes before its tests, or whose results are missing or forged |
    | ``no_code_reward`` | 0.0 | score of a reply without code |
    | ``time_limit_s`` | 10.0 | wall and CPU time of a whole execution (all tests) |
    | ``test_time_limit_s`` | 2.0 | time of each test, and of loading the code |
    | ``memory_limit_mb`` | 512 | memory of the process that runs the code |
    | ``feedback_chars`` | 1000 | longest detail (failing test and error) shown after a reply |
    | ``sandbox`` | ``None`` | the ``Sandbox`` that runs the code; by default one shared by the process (pass it to ``CodeEnv`` itself: ``gymnasium.make`` deep-copies its arguments) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: first version. A seed chooses task ``seed % n``, the rule of every MRLM env with a
      collection of tasks (before, the seed drew it from the generator).
    """

    def __init__(
        self,
        *,
        records: TaskSource | Sequence[CodeTask] | None = None,
        max_turns: int = 1,
        all_pass_bonus: float = 0.0,
        syntax_error_reward: float = 0.0,
        timeout_reward: float = 0.0,
        error_reward: float = 0.0,
        no_code_reward: float = 0.0,
        time_limit_s: float = 10.0,
        test_time_limit_s: float = 2.0,
        memory_limit_mb: int = 512,
        feedback_chars: int = 1000,
        sandbox: Sandbox | None = None,
        render_mode: str | None = None,
    ) -> None:
        judging = Judging(time_limit_s, test_time_limit_s, memory_limit_mb, feedback_chars, sandbox)
        super().__init__(_as_tasks(records), judging, max_turns=max_turns, render_mode=render_mode)
        self.all_pass_bonus = finite_float("all_pass_bonus", all_pass_bonus)
        self.outcome_rewards = {
            "syntax_error": float(syntax_error_reward),
            "timeout": float(timeout_reward),
            "error": float(error_reward),
            "no_code": float(no_code_reward),
        }

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        task = self.start_task(rng, self._reset_seed, options)
        info = {
            "system_prompt": SYSTEM_PROMPT,
            "task_id": task.task_id,
            "entry_point": task.entry_point,
            "source": task.source,
            "num_tests": len(task.tests),
        }
        return task_text(task), info

    def _respond(self, action: str) -> Feedback:
        code = extract_code(action, self.task.entry_point)
        program: Program | None = None
        if code is None:
            verdict = Verdict("no_code", (), len(self.task.tests))
        else:
            program = build_program(self.task, code)
            verdict = judge(
                program,
                self.task,
                self.sandbox,
                self.limits,
                step_time_limit_s=self.test_time_limit_s,
                error_chars=ERROR_CHARS,
            )
        info = self._scored(verdict)
        reward = self.score_change(info["score"])
        observation = judgement_text(
            verdict,
            program,
            self.task.tests,
            turns_left=self.turns_left,
            max_chars=self.feedback_chars,
            disclosure=self.disclosure,
        )
        info["quoted_tests"] = sorted(self.disclosure.quoted)
        return Feedback(observation, reward, done=verdict.outcome == "passed", info=info)

    def _scored(self, verdict: Verdict) -> dict[str, Any]:
        """``info`` for a verdict: the outcome, the test results and the score with its parts."""
        ran = verdict.outcome in ("passed", "failed")
        reward_pass = self.disclosure.scored_fraction(verdict) if ran else 0.0
        reward_bonus = self.all_pass_bonus if verdict.outcome == "passed" else 0.0
        reward_outcome = 0.0 if ran else self.outcome_rewards[verdict.outcome]
        return {
            "outcome": verdict.outcome,
            "passed": verdict.passed,
            "total": verdict.total,
            "pass_fraction": verdict.pass_fraction,
            "all_passed": verdict.all_passed,
            "results": verdict.result_infos(),
            "sandbox_status": verdict.sandbox_status,
            "message": verdict.message,
            "score": reward_pass + reward_bonus + reward_outcome,
            "reward_pass": reward_pass,
            "reward_bonus": reward_bonus,
            "reward_outcome": reward_outcome,
        }


def _as_tasks(tasks: TaskSource | Sequence[CodeTask] | None) -> tuple[CodeTask, ...]:
    if tasks is None:
        return builtin_tasks()
    if (
        isinstance(tasks, Sequence)
        and not isinstance(tasks, str)
        and tasks
        and isinstance(tasks[0], CodeTask)
    ):
        ready = tuple(task for task in tasks if isinstance(task, CodeTask))
        if len(ready) != len(tasks):
            raise ValueError("records mixes CodeTask objects with plain records")
        check_unique(ready)
        return ready
    return load_tasks(tasks)  # type: ignore[arg-type]
