"""A generator that answers ``What is x + y?`` by rule, so that success rates and pass@k are known exactly."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from mrlm.train.chat_template import IM_END
from mrlm.train.generation import Completion, SamplingParams

QUESTION = re.compile(r"What is (\d+) ([+-]) (\d+)\?")


class AdderGenerator:
    """Answers the last ``What is x op y?`` of each prompt: the first ``right(x, y)`` copies of a
    prompt within one generate call with ``\\boxed{value}``, the other copies with ``value + 1``."""

    def __init__(self, tokenizer: Any, right: Callable[[int, int], int]) -> None:
        self.tokenizer = tokenizer
        self.right = right
        self.end_id = tokenizer.convert_tokens_to_ids(IM_END)

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        seen: dict[tuple[int, ...], int] = {}
        out = []
        for prompt in prompts:
            copy = seen[tuple(prompt)] = seen.get(tuple(prompt), -1) + 1
            x, op, y = QUESTION.findall(self.tokenizer.decode(list(prompt)))[-1]
            value = int(x) + int(y) if op == "+" else int(x) - int(y)
            answer = value if copy < self.right(int(x), int(y)) else value + 1
            ids = [*self.tokenizer.encode(f"\\boxed{{{answer}}}"), self.end_id]
            out.append(Completion(ids, [-0.5] * len(ids), "stop"))
        return out
