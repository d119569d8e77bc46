"""A multi-agent text env made from dataset records and plain functions: prompts, team reward, next turns."""

from __future__ import annotations

import copy
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from mrlm.envs.core import Outcome, TextParallelEnv
from mrlm.envs.core.multi_agent import ParallelStep
from mrlm.envs.core.records import record_rows
from mrlm.envs.core.spaces import DEFAULT_MAX_OBSERVATION_LENGTH
from mrlm.envs.core.task_choice import choose_task
from mrlm.envs.core.text_env import RENDER_MODES

#: ``formatter(record) -> prompt``: one agent's first prompt.
Formatter = Callable[[dict[str, Any]], str]
#: ``reward(replies, record) -> float``: the team's reward for one joint reply, replies in agent order.
RewardFn = Callable[[list[str], dict[str, Any]], float]
#: ``transition(record, prompts, replies) -> next prompts``: per agent, its prompts and replies so far.
TransitionFn = Callable[[dict[str, Any], list[list[str]], list[list[str]]], Sequence[str]]


class TaskFunctionError(RuntimeError):
    """A function given to :class:`DatasetTaskEnv` raised, or returned what the env cannot use.

    The message names the function, the turn and the record; a raised exception is the ``__cause__``.
    """


class DatasetTaskEnv(TextParallelEnv):
    """Agents answer prompts made from dataset records; the team shares one reward per turn.

    | | |
    |---|---|
    | Agents | ``agent_0`` ... ``agent_{n-1}`` (``n = len(formatters)``), or the names given |
    | Parallel API | yes; no AEC form |
    | Action space | ``TextSpace``: any ``str`` (the agent's reply), at most 65,536 characters |
    | Observation space | ``Dict({"text": TextSpace})`` |

    ## Description
    The shape of a cooperative multi-LLM dataset task (as CoMLRL runs define them) as a PettingZoo
    env: each episode serves one record; agent ``k``'s first prompt is ``formatters[k](record)``;
    every turn all agents reply at once and ``reward(replies, record)`` scores the joint reply; with
    ``num_turns > 1``, ``transition(record, prompts, replies)`` writes every agent's next prompt from
    each agent's prompts and replies so far. :func:`~mrlm.envs.dataset_task.comlrl_reward` and
    :func:`~mrlm.envs.dataset_task.comlrl_transition` adapt CoMLRL's own reward and
    ``external_transition`` functions to these signatures.

    The functions receive copies: a record, prompt or reply they change is not changed in the env.
    Each is called once where the contract says (formatters at reset, the reward once per joint
    reply, the transition after every turn but the last), so replaying a seed replays the episode
    when the functions are deterministic. Whatever a function raises, or a result the env cannot use
    (a reward that is not a finite number, a prompt that is not a ``str``, a wrong number of
    prompts), is a :class:`TaskFunctionError` naming the function, the turn and the record; a ``step``
    that raises it changes nothing, so the same step can be retried or the episode reset.

    ## Action Space
    ``TextSpace``: the agent's reply; anything is accepted and passed to ``reward`` unchanged.

    ## Observation Space
    ``{"text": str}``: the agent's prompt of this turn; ``""`` once the episode is over.

    ## Rewards
    Shared: every agent gets ``reward(replies, record)`` of each turn, ``replies`` in agent order.

    ## Starting State
    ``reset(seed=s)`` serves record ``s % len(records)`` (seeds ``0 .. n-1`` visit every record once);
    ``reset()`` without a seed draws a record from the env's seeded stream; ``options={"index": i}``
    serves record ``i`` (other option keys are ignored). The reset ``info`` holds ``index`` (the
    record's) and, when ``system_prompt`` is given, ``system_prompt``.

    ## Episode End
    - Termination: after ``num_turns`` joint replies.
    - Truncation: never.

    ## Arguments
    >>> from mrlm.envs import DatasetTaskEnv
    >>> records = [{"a": 2, "b": 3}, {"a": 10, "b": -4}]
    >>> env = DatasetTaskEnv(
    ...     records,
    ...     formatters=[lambda r: f"What is {r['a']}?", lambda r: f"What is {r['b']}?"],
    ...     reward=lambda replies, r: float(sum(map(int, replies)) == r["a"] + r["b"]),
    ... )
    >>> observations, infos = env.reset(seed=1)
    >>> observations["agent_1"]["text"], infos["agent_0"]
    ('What is -4?', {'index': 1})
    >>> _, rewards, terminations, _, _ = env.step({"agent_0": "10", "agent_1": "-4"})
    >>> rewards, terminations
    ({'agent_0': 1.0, 'agent_1': 1.0}, {'agent_0': True, 'agent_1': True})

    | argument | default | meaning |
    |---|---|---|
    | ``records`` | required | the records: a non-empty list of dicts, a JSONL path or a ``datasets.Dataset`` |
    | ``formatters`` | required | ``formatter(record) -> str`` per agent: its first prompt |
    | ``reward`` | required | ``reward(replies, record) -> float``: every agent's reward for one joint reply |
    | ``transition`` | ``None`` | ``transition(record, prompts, replies) -> next prompts``; required when ``num_turns > 1`` |
    | ``num_turns`` | 1 | joint replies per episode |
    | ``agents`` | ``None`` | agent names, one per formatter; ``agent_0`` ... by default |
    | ``system_prompt`` | ``None`` | given to every agent as the ``system_prompt`` reset info |
    | ``render_mode`` | ``None`` | ``"ansi"``: the transcript (prompts, replies, rewards); ``"human"`` prints it |

    ## Version History
    - v0: records, per-agent formatters, a team reward per turn, transitions between turns.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "dataset_task",
        "is_parallelizable": True,
    }

    def __init__(
        self,
        records: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
        formatters: Sequence[Formatter],
        reward: RewardFn,
        *,
        transition: TransitionFn | None = None,
        num_turns: int = 1,
        agents: Sequence[str] | None = None,
        system_prompt: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.records = _copy_records(records)
        if isinstance(formatters, (str, bytes)) or not isinstance(formatters, Sequence) or not formatters:
            raise TypeError("formatters must be a non-empty list of functions, one per agent")
        for k, formatter in enumerate(formatters):
            if not callable(formatter):
                raise TypeError(
                    f"formatters[{k}] must be callable as formatter(record), got {formatter!r:.60}"
                )
        if not callable(reward):
            raise TypeError(f"reward must be callable as reward(replies, record), got {reward!r:.60}")
        if transition is not None and not callable(transition):
            raise TypeError(
                f"transition must be callable as transition(record, prompts, replies), got {transition!r:.60}"
            )
        if not isinstance(num_turns, int) or isinstance(num_turns, bool) or num_turns < 1:
            raise ValueError(f"num_turns must be a positive int, got {num_turns!r}")
        if num_turns > 1 and transition is None:
            raise ValueError(f"num_turns={num_turns} needs a transition function to write the next prompts")
        if agents is None:
            agents = [f"agent_{k}" for k in range(len(formatters))]
        elif isinstance(agents, str) or not all(isinstance(agent, str) for agent in agents):
            raise TypeError(f"agents must be a list of names, got {agents!r:.60}")
        if len(agents) != len(formatters):
            raise ValueError(
                f"{len(formatters)} formatters for {len(agents)} agents {list(agents)}; give one each"
            )
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {type(system_prompt).__name__}")
        super().__init__(agents, render_mode=render_mode)
        self.formatters = tuple(formatters)
        self.reward_fn = reward
        self.transition = transition
        self.num_turns = num_turns
        self.system_prompt = system_prompt
        self._index: int | None = None
        self._turn = 0
        self._prompts: list[list[str]] = []
        self._replies: list[list[str]] = []

    # The episode, as a trainer may read it ----------------------------------------------------------

    @property
    def index(self) -> int:
        """The position of this episode's record; RuntimeError before the first reset."""
        if self._index is None:
            raise RuntimeError("call reset() first")
        return self._index

    @property
    def record(self) -> dict[str, Any]:
        """A copy of this episode's record."""
        return copy.deepcopy(self.records[self.index])

    @property
    def prompts(self) -> list[list[str]]:
        """Each agent's prompts so far, in agent order."""
        return [list(history) for history in self._prompts]

    @property
    def replies(self) -> list[list[str]]:
        """Each agent's replies so far, in agent order."""
        return [list(history) for history in self._replies]

    # The game ---------------------------------------------------------------------------------------

    def step(self, actions: Mapping[str, str]) -> ParallelStep:
        """One joint reply: the reward of this turn and, unless it is the last, every agent's next prompt.

        All or nothing: when the step raises (a :class:`TaskFunctionError` from the reward or
        transition function, or a refused action), the env is exactly as before it: same turn,
        prompts, replies, transcript and live agents. Retrying the same step then scores the same turn,
        and the episode goes on as if the failed call had never been made.
        """
        # The base class writes the moves to the transcript before the user's functions run, and
        # ``_act`` records each result as it comes: put all of it back if the step does not finish.
        turn, prompts, replies, transcript = self._turn, self.prompts, self.replies, len(self._transcript)
        try:
            return super().step(actions)
        except BaseException:
            self._turn, self._prompts, self._replies = turn, prompts, replies
            del self._transcript[transcript:]
            raise

    def _start(self, rng: np.random.Generator, options: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
        asked = {"index": options["index"]} if "index" in options else {}
        self._index = int(choose_task(range(len(self.records)), {}, rng, asked, seed=self._reset_seed))
        self._turn = 0
        self._replies = [[] for _ in self.possible_agents]
        self._prompts = []
        for agent, formatter in zip(self.possible_agents, self.formatters, strict=True):
            prompt = self._call(formatter, f"formatter of {agent!r}", "at turn 1", self.record)
            self._prompts.append(
                [self._check_prompt(prompt, formatter, f"formatter of {agent!r}", "at turn 1")]
            )
            self._record(f"prompt to {agent}", prompt)
        info: dict[str, Any] = {"index": self._index}
        if self.system_prompt is not None:
            info["system_prompt"] = self.system_prompt
        return dict.fromkeys(self.possible_agents, info)

    def _observe(self, agent: str) -> str:
        if self._turn >= self.num_turns:
            return ""
        return self._prompts[self.possible_agents.index(agent)][-1]

    def _act(self, actions: Mapping[str, str]) -> Outcome:
        self._turn += 1
        turn = self._turn
        replies = [actions[agent] for agent in self.possible_agents]
        for history, reply in zip(self._replies, replies, strict=True):
            history.append(reply)
        value = self._call(self.reward_fn, "reward function", f"at turn {turn}", list(replies), self.record)
        reward = self._check_reward(value, turn)
        self._record("reward", f"turn {turn}: {reward:g}")
        done = turn >= self.num_turns
        if not done:
            assert self.transition is not None  # checked in __init__
            where = f"after turn {turn}"
            nexts = self._call(
                self.transition, "transition function", where, self.record, self.prompts, self.replies
            )
            for agent, history, prompt in zip(
                self.possible_agents, self._prompts, self._check_prompts(nexts, where), strict=True
            ):
                history.append(prompt)
                self._record(f"prompt to {agent}", prompt)
        infos = {agent: {"index": self._index, "turn": turn} for agent in self.possible_agents}
        return Outcome(rewards=dict.fromkeys(self.possible_agents, reward), done=done, infos=infos)

    # Calling the user's functions -------------------------------------------------------------------

    def _call(self, func: Callable[..., Any], role: str, where: str, *args: Any) -> Any:
        try:
            return func(*args)
        except Exception as exc:
            raise TaskFunctionError(
                f"the {role} {_name(func)} raised {where} (record {self._index}): {type(exc).__name__}: {exc}"
            ) from exc

    def _check_reward(self, value: Any, turn: int) -> float:
        if not isinstance(value, numbers.Real):
            raise TaskFunctionError(
                f"the reward function {_name(self.reward_fn)} returned {value!r:.60} at turn {turn} "
                f"(record {self._index}); it must return a finite number"
            )
        try:
            reward = float(value)
        except OverflowError:  # an int (or Fraction) past float's range, whose repr may be too long
            raise TaskFunctionError(
                f"the reward function {_name(self.reward_fn)} returned a number too large for a float "
                f"(beyond {sys.float_info.max:.3g} in size) at turn {turn} (record {self._index}); it must "
                "return a finite number"
            ) from None
        if not math.isfinite(reward):
            raise TaskFunctionError(
                f"the reward function {_name(self.reward_fn)} returned {reward} at turn {turn} "
                f"(record {self._index}); it must return a finite number"
            )
        return reward

    def _check_prompts(self, prompts: Any, where: str) -> list[str]:
        count = len(self.possible_agents)
        if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) or len(prompts) != count:
            raise TaskFunctionError(
                f"the transition function {_name(self.transition)} returned {prompts!r:.60} {where} "
                f"(record {self._index}); it must return a list of {count} prompts, one per agent"
            )
        return [
            self._check_prompt(prompt, self.transition, "transition function", where) for prompt in prompts
        ]

    def _check_prompt(self, prompt: Any, func: Any, role: str, where: str) -> str:
        if not isinstance(prompt, str):
            raise TaskFunctionError(
                f"the {role} {_name(func)} returned a prompt of type {type(prompt).__name__} {where} "
                f"(record {self._index}); prompts must be str"
            )
        if len(prompt) > DEFAULT_MAX_OBSERVATION_LENGTH:
            raise TaskFunctionError(
                f"the {role} {_name(func)} returned a prompt of {len(prompt)} characters {where} "
                f"(record {self._index}); an observation holds at most {DEFAULT_MAX_OBSERVATION_LENGTH}"
            )
        return prompt


def _copy_records(records: object) -> list[dict[str, Any]]:
    rows = record_rows(records)
    if not rows:
        raise ValueError("records must hold at least one record")
    copies = []
    for position, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"record {position} must be a mapping (a dict), got {type(row).__name__}")
        copies.append(copy.deepcopy(dict(row)))
    return copies


def _name(func: Any) -> str:
    """How an error names a function: its qualified name, else its repr."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return repr(name) if isinstance(name, str) else f"{func!r:.60}"
