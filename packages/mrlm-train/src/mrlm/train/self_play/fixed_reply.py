"""A rule-based opponent: a generator that gives the same reply to every prompt.

A yardstick for self-play: unlike a frozen copy of the policy, it never changes, so a policy's win
rate against it is comparable across runs and steps. The default reply is a Debate-v0 slogan, an
assertion without argument that a debater who argues at all should beat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mrlm.train.generation.base import Completion, FinishReason, SamplingParams

#: The default fixed reply: a one-line debate slogan.
DEBATE_SLOGAN = "This idea is simply wrong and everyone knows it."


class FixedReply:
    """Replies ``text`` to every prompt, ended by a stop token, within the token budget.

    The reply is ``text``'s token ids then the first stop id of the call (``params.stop_token_ids``,
    else the tokenizer's eos), finishing ``"stop"``; when that is longer than
    ``params.max_new_tokens`` it is cut there and finishes ``"length"``, as a sampled reply would.
    Log-probs are 0 (the reply is certain).
    """

    def __init__(self, tokenizer: Any, text: str = DEBATE_SLOGAN) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("FixedReply needs a tokenizer with an eos token to end its reply")
        self.text = text
        self.tokenizer = tokenizer
        self.ids: list[int] = list(tokenizer.encode(text, add_special_tokens=False))

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Completion]:
        stop = params.stop_token_ids[0] if params.stop_token_ids else int(self.tokenizer.eos_token_id)
        ids = [*self.ids, stop]
        reason: FinishReason = "stop"
        if len(ids) > params.max_new_tokens:
            ids, reason = ids[: params.max_new_tokens], "length"
        return [Completion(list(ids), [0.0] * len(ids), reason) for _ in prompts]
