"""``mrlm/Math-v0``: answer arithmetic and algebra questions in free text."""

from __future__ import annotations

from typing import Any

import numpy as np

from mrlm.envs.core.text_env import Feedback, TextEnv
from mrlm.envs.math.answers import answers_match, extract_answer
from mrlm.envs.math.tasks import LEVELS, MathTask, generate_task

SYSTEM_PROMPT = (
    "You are a careful mathematician. Think step by step, then give the final answer as \\boxed{answer}."
)


class MathEnv(TextEnv):
    """Math reasoning: the agent reads a question and replies with worked text ending in an answer.

    ## Description
    Each episode draws one task from a seeded generator (difficulty levels 1-5: addition and
    subtraction, multiplication and exact division, order of operations, fractions, linear equations).
    The reply may contain any reasoning; the final answer is taken from the last ``\\boxed{}``, else a
    ``#### n`` line, else "the answer is ...", else the last number. Answers are compared as exact
    rationals, so ``1/2``, ``0.5`` and ``\\frac{1}{2}`` are equal.

    ## Action Space
    ``TextSpace``: any ``str`` (the model's reply), at most ``max_action_length`` characters.

    ## Observation Space
    ``TextSpace``: on reset, the question; after a reply, feedback (``"Correct."``, or in multi-turn mode
    a message that the answer is wrong, which never reveals the answer).

    ## Rewards
    ``correct_reward`` (1.0) for a correct answer, 0.0 otherwise, plus ``format_reward`` (0.0 by
    default) when the reply states its answer in ``\\boxed{}``. ``info`` carries ``correct``,
    ``extracted_answer``, ``reward_correct`` and ``reward_format``.

    ## Starting State
    ``reset(seed=s)`` draws the task from ``s``: the same seed always gives the same task.
    ``info["system_prompt"]`` holds a system prompt, ``info["level"]`` and ``info["topic"]`` describe
    the task.

    ## Episode End
    - Termination: a correct answer, or ``max_turns`` replies given.
    - Truncation: never by the env itself (only by a wrapper such as ``TimeLimit``).

    ## Arguments
    >>> import gymnasium
    >>> import mrlm.envs
    >>> env = gymnasium.make("mrlm/Math-v0", level=1)
    >>> observation, info = env.reset(seed=0)

    | argument | default | meaning |
    |---|---|---|
    | ``level`` | ``None`` | difficulty 1-5; None draws a level uniformly per episode |
    | ``max_turns`` | 1 | replies allowed; after a wrong one the agent may try again |
    | ``correct_reward`` | 1.0 | reward for a correct answer |
    | ``format_reward`` | 0.0 | extra reward when the answer is given in ``\\boxed{}`` |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: first version.
    """

    def __init__(
        self,
        *,
        level: int | None = None,
        max_turns: int = 1,
        correct_reward: float = 1.0,
        format_reward: float = 0.0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns, render_mode=render_mode)
        if level is not None and level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS} or None, got {level!r}")
        self.level = level
        self.correct_reward = float(correct_reward)
        self.format_reward = float(format_reward)
        self.task: MathTask | None = None

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        level = self.level if self.level is not None else int(rng.choice(LEVELS))
        self.task = generate_task(rng, level)
        info = {"system_prompt": SYSTEM_PROMPT, "level": self.task.level, "topic": self.task.topic}
        return self.task.question, info

    def _respond(self, action: str) -> Feedback:
        assert self.task is not None
        extracted = extract_answer(action)
        correct = answers_match(extracted, self.task.answer)
        reward_correct = self.correct_reward if correct else 0.0
        reward_format = self.format_reward if "\\boxed{" in action else 0.0
        info = {
            "correct": correct,
            "extracted_answer": extracted,
            "reward_correct": reward_correct,
            "reward_format": reward_format,
        }
        if correct:
            observation = "Correct."
        elif self.turns_left > 0:
            observation = (
                "That answer is not correct. Check your work and try again."
                if extracted is not None
                else "No final answer found. End your reply with \\boxed{answer}."
            )
        else:
            observation = "That answer is not correct. No attempts left."
        return Feedback(observation, reward_correct + reward_format, done=correct, info=info)
