"""Hand-written records for the SFT tests, and reading masks back as text."""

from __future__ import annotations

from typing import Any

from mrlm.train.chat_template import IM_END
from mrlm.train.rollout import Conversation, Trajectory
from mrlm.train.sft import SFTExample

SYSTEM = {"role": "system", "content": "You play a guessing game."}
FIRST = {"role": "user", "content": "Guess my number (1-9)."}
# A conversation of three replies; the environment answers the first two.
CHAT: list[dict[str, str]] = [
    SYSTEM,
    FIRST,
    {"role": "assistant", "content": "Is it 5?"},
    {"role": "user", "content": "Too high."},
    {"role": "assistant", "content": "Is it 2?"},
    {"role": "user", "content": "Too low. é 🙂"},
    {"role": "assistant", "content": "Then 3!"},
]


def target_texts(tokenizer: Any, example: SFTExample) -> list[str]:
    """The text of each maximal run of target tokens, in order."""
    texts: list[str] = []
    run: list[int] = []
    for token, flag in zip([*example.input_ids, -1], [*example.labels_mask, 0], strict=True):
        if flag:
            run.append(token)
        elif run:
            texts.append(tokenizer.decode(run, skip_special_tokens=False))
            run = []
    return texts


def reply_ids(tokenizer: Any, text: str) -> list[int]:
    """A reply as the policy would sample it: its tokens and the stop token."""
    return [*tokenizer.encode(text, add_special_tokens=False), tokenizer.convert_tokens_to_ids(IM_END)]


def make_trajectory(
    tokenizer: Any,
    turns: list[tuple[list[int], str | None]],
    *,
    rewards: list[float] | None = None,
    group: int = 0,
    seed: int = 0,
) -> Trajectory:
    """A trajectory built as the rollout engine builds one: (reply ids, env answer or None) per turn."""
    conversation = Conversation(tokenizer, [SYSTEM, FIRST])
    for ids, answer in turns:
        conversation.add_reply(ids, [-0.5] * len(ids), stopped=True)
        if answer is not None:
            assert conversation.add_user(answer)
    return Trajectory(
        env_id="guess",
        seed=seed,
        group=group,
        messages=conversation.messages,
        token_ids=conversation.token_ids,
        mask=conversation.mask,
        logprobs=conversation.logprobs,
        turn_rewards=rewards if rewards is not None else [0.0] * len(turns),
    )


def guessing_trajectory(tokenizer: Any, **kwargs: Any) -> Trajectory:
    """The :data:`CHAT` conversation played as a trajectory."""
    turns = [
        (reply_ids(tokenizer, "Is it 5?"), "Too high."),
        (reply_ids(tokenizer, "Is it 2?"), "Too low. é 🙂"),
        (reply_ids(tokenizer, "Then 3!"), None),
    ]
    return make_trajectory(tokenizer, turns, **kwargs)
