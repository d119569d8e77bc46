"""``mrlm/Math-v0``: answer arithmetic, algebra and word problems in free text."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from mrlm.envs.core.numbers import finite_float
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.core.text_env import Feedback, TextEnv
from mrlm.envs.math.answers import ANSWER_WINDOW, extract
from mrlm.envs.math.generator import draw_task, resolve_topics
from mrlm.envs.math.records import load_records
from mrlm.envs.math.tasks import LEVELS, MathTask, is_level
from mrlm.envs.math.verify import DEFAULT_VERIFY_TIMEOUT, check_answer

SYSTEM_PROMPT = (
    "You are a careful mathematician. Think step by step, then give the final answer as \\boxed{answer}."
)

CORRECT = "Correct."
RETRY = "That answer is not correct. Check your work and try again."
RETRY_SLOW = "That answer could not be checked in time. Write it in a simpler form and try again."
RETRY_MISSING = "No final answer found. End your reply with \\boxed{answer}."
FINAL_WRONG = "That answer is not correct. No attempts left."
FINAL_MISSING = "No final answer found. No attempts left."


class MathEnv(TextEnv):
    """Math reasoning: the agent reads a question and replies with worked text ending in an answer.

    ## Description
    Tasks come from a seeded generator or from dataset records. The generator has eight topics
    (``integers``, ``decimals``, ``fractions``; ``linear_equation``, ``linear_system``, ``inequality``;
    ``word_problem`` with shopping, travel, sharing, ages and discount stories; ``multi_step``) at
    difficulty levels 1-5; every task knows its exact answer (a number, a pair ``(x, y)`` or an
    interval). Records are GSM8K (``question``/``answer`` with ``#### n``) or MATH (``problem``/
    ``solution`` with a final ``\\boxed{}``) dicts, from a list, a JSONL file or a ``datasets.Dataset``.

    The final answer of a reply is the last ``\\boxed{}``, else a ``#### ...`` line, else
    "the answer is ...", else the last number; only the last ``answer_window`` characters are read.
    Plain values (numbers, pairs, intervals) are compared exactly (``1/2 == 0.5 == \\frac12``,
    ``1,000 == 1000``, ``x < 3 == (-\\infty, 3)``); anything else is checked symbolically by math-verify in
    a worker process with a ``verify_timeout`` deadline, which also holds when ``step`` runs outside the
    main thread. Garbage replies never raise; they score 0.

    ## Action Space
    ``TextSpace``: any ``str`` (the model's reply), at most ``max_action_length`` (65,536) characters.

    ## Observation Space
    ``TextSpace``: on reset, the question; after a reply, feedback: ``"Correct."``, or a message that
    the answer is wrong, missing or too slow to check. Feedback never reveals the gold answer.

    ## Rewards
    ``correct_reward`` (1.0) for a correct answer, else 0.0, plus ``format_reward`` (0.0) for the
    episode's first reply whose final answer is in ``\\boxed{}`` (right or wrong). The format reward is
    paid at most once per episode: with ``max_turns > 1``, later boxed replies earn none, so a right
    answer given after wrong ones never returns more than the same answer given at once. ``info``
    carries ``reward_correct``, ``reward_format`` (paid with this reply), ``correct``,
    ``extracted_answer``, ``answer_source`` (``"boxed"``, ``"hashes"``, ``"answer_is"``,
    ``"last_number"`` or None), ``verify_method`` (``"exact"``, ``"text"``, ``"math_verify"``,
    ``"none"``, ``"too_long"``), ``verify_timeout`` and ``verify_error``.

    ## Starting State
    Generated tasks: ``reset(seed=s)`` draws the level (when ``level`` is None), the topic and the task
    from ``s``; the same seed always gives the same task. ``options={"level": l, "topic": t}`` fixes
    either for one episode. Records: ``reset(seed=s)`` serves record ``s % len(records)``, so seeds
    ``0 .. n-1`` visit every record once; ``reset()`` without a seed draws a record uniformly (with
    replacement) from the env's seeded random stream; ``options={"index": i}`` serves record ``i``.
    ``info`` holds ``system_prompt``, ``level`` (None when a record has none), ``topic``, ``subtopic``,
    ``source`` (``"generated"``, ``"gsm8k"`` or ``"math"``) and ``index`` (the record's, else None).

    ## Episode End
    - Termination: a correct answer, or ``max_turns`` replies given.
    - Truncation: never by the env itself (only by a wrapper such as ``TimeLimit``).

    ## Arguments
    >>> import gymnasium
    >>> import mrlm.envs
    >>> env = gymnasium.make("mrlm/Math-v0", level=1, topics="arithmetic", format_reward=0.1)
    >>> question, info = env.reset(seed=0)
    >>> question.startswith("What is"), info["level"], info["source"]
    (True, 1, 'generated')
    >>> _, reward, terminated, truncated, info = env.step(f"\\\\boxed{{{env.unwrapped.task.answer}}}")
    >>> reward, terminated, truncated, info["correct"]
    (1.1, True, False, True)

    | argument | default | meaning |
    |---|---|---|
    | ``level`` | ``None`` | difficulty 1-5; None draws a level uniformly per episode |
    | ``topics`` | ``None`` | topic or group names (``"arithmetic"``, ``"algebra"``) to draw from; None for all |
    | ``records`` | ``None`` | GSM8K/MATH records (list, JSONL path or ``Dataset``) instead of the generator |
    | ``max_turns`` | 1 | replies allowed; after a wrong one the agent may try again |
    | ``correct_reward`` | 1.0 | reward for a correct answer |
    | ``format_reward`` | 0.0 | extra reward, once per episode, for the first reply answering in ``\\boxed{}`` |
    | ``percent_as_fraction`` | ``False`` | True: ``50%`` means 0.5; False: ``%`` is a unit, ``50% == 50`` |
    | ``verify_timeout`` | 5.0 | seconds a symbolic check may take; a timeout counts as wrong |
    | ``answer_window`` | 8000 | characters at the end of a reply searched for the final answer |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: generator with eight topics and five levels; GSM8K and MATH records; exact checking of
      plain values and time-bounded math-verify for the rest; format reward; multi-turn feedback.
    """

    def __init__(
        self,
        *,
        level: int | None = None,
        topics: str | Iterable[str] | None = None,
        records: str | os.PathLike[str] | Iterable[Mapping[str, Any]] | None = None,
        max_turns: int = 1,
        correct_reward: float = 1.0,
        format_reward: float = 0.0,
        percent_as_fraction: bool = False,
        verify_timeout: float = DEFAULT_VERIFY_TIMEOUT,
        answer_window: int = ANSWER_WINDOW,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns, render_mode=render_mode)
        if level is not None and not is_level(level):
            raise ValueError(f"level must be one of {LEVELS} or None, got {level!r}")
        timeout = finite_float("verify_timeout", verify_timeout)
        if not timeout > 0:
            raise ValueError(f"verify_timeout must be positive, got {verify_timeout!r}")
        if not isinstance(answer_window, int) or answer_window < 1:
            raise ValueError(f"answer_window must be a positive int, got {answer_window!r}")
        self.level = None if level is None else int(level)
        self.topics = resolve_topics(topics)
        self.records: list[MathTask] | None = None
        if records is not None:
            if level is not None or topics is not None:
                raise ValueError("level and topics select generated tasks; with records, leave them None")
            self.records = load_records(records)
        self.correct_reward = finite_float("correct_reward", correct_reward)
        self.format_reward = finite_float("format_reward", format_reward)
        self.percent_as_fraction = bool(percent_as_fraction)
        self.verify_timeout = timeout
        self.answer_window = answer_window
        self.task: MathTask | None = None
        self._format_paid = False

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.task = self._record(rng, options) if self.records is not None else self._generate(rng, options)
        task = self.task
        self._format_paid = False
        info = {
            "system_prompt": SYSTEM_PROMPT,
            "level": task.level,
            "topic": task.topic,
            "subtopic": task.subtopic,
            "source": task.source,
            "index": task.index,
        }
        return task.question, info

    def _generate(self, rng: np.random.Generator, options: dict[str, Any]) -> MathTask:
        if options:
            _check_options(options, ("level", "topic"))
        level = options.get("level", self.level)
        if level is None:
            level = LEVELS[int(rng.integers(len(LEVELS)))]
        elif not is_level(level):
            raise ValueError(f"options['level'] must be one of {LEVELS}, got {level!r}")
        topics = resolve_topics(options["topic"]) if "topic" in options else self.topics
        return draw_task(rng, int(level), topics)

    def _record(self, rng: np.random.Generator, options: dict[str, Any]) -> MathTask:
        assert self.records is not None
        if options:
            _check_options(options, ("index",))
        return choose_task(self.records, {}, rng, options, seed=self._reset_seed)

    def _respond(self, action: str) -> Feedback:
        assert self.task is not None
        found = extract(action, window=self.answer_window)
        verdict = check_answer(
            found.answer,
            self.task.answer,
            percent_as_fraction=self.percent_as_fraction,
            timeout=self.verify_timeout,
        )
        reward_correct = self.correct_reward if verdict.correct else 0.0
        # The format reward is paid once per episode: the first boxed reply earns it, later ones do not.
        reward_format = 0.0
        if found.source == "boxed" and not self._format_paid:
            reward_format, self._format_paid = self.format_reward, True
        info = {
            "correct": verdict.correct,
            "extracted_answer": found.answer,
            "answer_source": found.source,
            "reward_correct": reward_correct,
            "reward_format": reward_format,
            "verify_method": verdict.method,
            "verify_timeout": verdict.timed_out,
            "verify_error": verdict.error,
        }
        if verdict.correct:
            observation = CORRECT
        elif self.turns_left > 0:
            observation = (
                RETRY_MISSING if found.answer is None else RETRY_SLOW if verdict.timed_out else RETRY
            )
        else:
            observation = FINAL_MISSING if found.answer is None else FINAL_WRONG
        return Feedback(observation, reward_correct + reward_format, done=verdict.correct, info=info)


def _check_options(options: Mapping[str, Any], accepted: tuple[str, ...]) -> None:
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; this env accepts {list(accepted)}")
