"""One agent's side of one episode while it is played; it becomes that agent's :class:`Trajectory`.

A seat keeps the agent's own conversation (its observations as user turns, its replies as assistant
turns), the token span of each reply, and the reward and info credited to each reply. Rewards reach a
reply through :meth:`Seat.credit`, which adds to the latest reply: whatever the env pays between an
agent's reply and its next one is that reply's. What an env pays before the agent's first reply is
kept aside and added to the first reply.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mrlm.train.generation.base import Completion
from mrlm.train.rollout.conversation import Conversation
from mrlm.train.rollout.trajectory import Trajectory, Truncation


@dataclass
class Seat:
    """An agent in an episode in progress (``agent`` is None in a single-agent env)."""

    agent: str | None
    policy: str
    seed: int
    episode: int
    sample: int
    reset_info: dict[str, Any] = field(default_factory=dict)
    conversation: Conversation | None = None
    turn_rewards: list[float] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    early_reward: float = 0.0
    final_observation: str | None = None
    terminated: bool = False
    truncated: bool = False
    truncation: Truncation | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def num_turns(self) -> int:
        return len(self.turn_rewards)

    @property
    def opened(self) -> bool:
        return self.conversation is not None

    def open(
        self, tokenizer: Any, system_prompt: str | None, observation: str, max_prompt_tokens: int | None
    ) -> bool:
        """Start the conversation with the system prompt (if any) and the first observation.

        Returns False when the prompt is longer than ``max_prompt_tokens`` (the conversation exists
        all the same: the trajectory keeps the prompt it could not play).
        """
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": observation})
        self.conversation = Conversation(tokenizer, messages)
        return max_prompt_tokens is None or len(self.conversation) <= max_prompt_tokens

    def ask(self, observation: str, max_prompt_tokens: int | None) -> bool:
        """Append an observation as the next user turn; False, changing nothing, when it does not fit."""
        return self._conversation.add_user(observation, max_prompt_tokens)

    def reply(self, completion: Completion) -> str:
        """Append a sampled reply (a new turn, reward 0 so far); return its text, the agent's action."""
        conversation = self._conversation
        start = len(conversation)
        text = conversation.add_reply(
            completion.token_ids, completion.logprobs, stopped=completion.finish_reason == "stop"
        )
        self.spans.append((start, len(conversation)))
        self.finish_reasons.append(completion.finish_reason)
        self.turn_rewards.append(self.early_reward)
        self.infos.append({})
        self.early_reward = 0.0
        return text

    def credit(self, reward: float, info: Mapping[str, Any] | None = None) -> None:
        """Add ``reward`` to the latest reply and merge ``info`` into its info (newer keys win)."""
        if not self.turn_rewards:
            self.early_reward += reward
            return
        self.turn_rewards[-1] += reward
        if info:
            self.infos[-1].update(copy.deepcopy(dict(info)))

    def end(self, observation: str | None, terminated: bool, truncated: bool) -> None:
        """The env ended the agent's part: keep its last observation and how it ended."""
        self.final_observation = observation
        self.terminated = bool(terminated)
        if truncated and not terminated:
            self.cut("env")

    def cut(self, why: Truncation, observation: str | None = None) -> None:
        """The rollout stops the agent's part before the env ends it."""
        if observation is not None:
            self.final_observation = observation
        self.truncated, self.truncation = True, why

    def fork(self) -> Seat:
        """An independent copy, to try another reply from the same state."""
        twin = copy.copy(self)
        twin.conversation = self.conversation.copy() if self.conversation is not None else None
        twin.turn_rewards = list(self.turn_rewards)
        twin.finish_reasons = list(self.finish_reasons)
        twin.infos = copy.deepcopy(self.infos)
        twin.spans = list(self.spans)
        return twin

    def trajectory(self, env_id: str, group: int, *, last_turn_only: bool = False) -> Trajectory:
        """The record of the seat.

        Args:
            env_id: the env's id.
            group: the id of the group the row belongs to.
            last_turn_only: train the last reply alone: the earlier replies get mask 0, log-prob 0 and
                reward 0 (they are trained in rows of their own, as in the ``cross`` joint mode).
        """
        conversation = self._conversation
        mask, logprobs = list(conversation.mask), list(conversation.logprobs)
        rewards = list(self.turn_rewards)
        if last_turn_only:
            for start, end in self.spans[:-1]:
                mask[start:end] = [0] * (end - start)
                logprobs[start:end] = [0.0] * (end - start)
            rewards = [0.0] * (len(rewards) - 1) + rewards[-1:]
        return Trajectory(
            env_id=env_id,
            seed=self.seed,
            group=group,
            messages=[dict(m) for m in conversation.messages],
            token_ids=list(conversation.token_ids),
            mask=mask,
            logprobs=logprobs,
            turn_rewards=rewards,
            finish_reasons=list(self.finish_reasons),
            infos=copy.deepcopy(self.infos),
            reset_info=copy.deepcopy(self.reset_info),
            final_observation=self.final_observation,
            terminated=self.terminated,
            truncated=self.truncated,
            truncation=self.truncation,
            agent=self.agent,
            policy=self.policy,
            episode=self.episode,
            sample=self.sample,
            turn_spans=list(self.spans),
        )

    @property
    def _conversation(self) -> Conversation:
        if self.conversation is None:
            raise RuntimeError(f"the conversation of agent {self.agent!r} was never opened")
        return self.conversation
