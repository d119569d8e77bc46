"""A scripted multi-turn env and a scripted generator, to test the engine exactly."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from mrlm.envs import Feedback, TextEnv
from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, SamplingParams

SYSTEM_PROMPT = "Repeat the number you are given."


class EchoEnv(TextEnv):
    """Asks for a seeded number; a reply containing it scores 1 and ends the episode."""

    def __init__(self, max_turns: int = 3) -> None:
        super().__init__(max_turns=max_turns)
        self.number = 0

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.number = int(rng.integers(10, 100))
        return f"Say {self.number}.", {"system_prompt": SYSTEM_PROMPT, "number": self.number}

    def _respond(self, action: str) -> Feedback:
        if str(self.number) in action:
            return Feedback("Correct.", 1.0, True, {"correct": True})
        return Feedback(f"No. Say {self.number}, please.", 0.0, False, {"correct": False})


class ScriptedGenerator:
    """Replies by rule, like a policy that learns from feedback.

    First attempt: a wrong number, ended with ``<|im_end|>``; the group member of odd index in a batch
    is cut by length instead. Later attempts: the requested number. Records every batch it served.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.end_id = tokenizer.convert_tokens_to_ids(IM_END)
        self.batches: list[int] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        self.batches.append(len(prompts))
        return [self._reply(list(p), row) for row, p in enumerate(prompts)]

    def _reply(self, prompt: list[int], row: int) -> Completion:
        text = self.tokenizer.decode(prompt)
        retry = text.count("<|im_start|>user") > 1
        number = re.findall(r"Say (\d+)", text)[-1]
        if retry:
            ids = [*self.tokenizer.encode(f"Fine: {number}"), self.end_id]
            return Completion(ids, [-0.25] * len(ids), "stop")
        ids = self.tokenizer.encode(f"I say {int(number) + 1} ")
        if row % 2:
            return Completion(ids, [-0.5] * len(ids), "length")
        ids.append(self.end_id)
        return Completion(ids, [-0.75] * len(ids), "stop")
