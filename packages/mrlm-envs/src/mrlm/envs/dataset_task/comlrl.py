"""CoMLRL's reward and transition functions as :class:`~mrlm.envs.dataset_task.DatasetTaskEnv` takes them.

A CoMLRL run defines its task by a reward function called with one list of completions per agent
(``reward_func(completions_0, completions_1, ..., batch_items=[record, ...])``, returning one float
per completion) and, for several turns, an ``external_transition`` that writes every agent's next
prompt. The adapters call them as CoMLRL does, for one record and one completion per agent, so a run
ported to MRLM keeps its functions unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mrlm.envs.dataset_task.env import RewardFn, TransitionFn


def comlrl_reward(func: Callable[..., Any]) -> RewardFn:
    """``reward(replies, record)`` from a CoMLRL-style reward function.

    ``func`` is called as ``func([reply_0], [reply_1], ..., batch_items=[record])``, each agent's reply
    in a one-element list; without ``batch_items`` when ``func`` takes no such keyword (nor
    ``**kwargs``). Of a list, tuple or array it returns, the first value is the reward; a bare number
    is taken as is. The env checks that the reward is a finite number.
    """
    if not callable(func):
        raise TypeError(f"comlrl_reward needs a function, got {func!r:.60}")
    name = _name(func)
    takes_batch_items = _takes_keyword(func, "batch_items")

    def reward(replies: list[str], record: Mapping[str, Any]) -> float:
        completions = [[reply] for reply in replies]
        result = func(*completions, batch_items=[record]) if takes_batch_items else func(*completions)
        if hasattr(result, "tolist"):  # a NumPy array or a tensor
            result = result.tolist()
        if isinstance(result, (list, tuple)):
            if not result:
                raise ValueError(f"{name} returned an empty list; it must return one reward per completion")
            result = result[0]
        return result

    reward.__name__ = reward.__qualname__ = f"comlrl_reward({name})"
    return reward


def comlrl_transition(func: Callable[..., Any]) -> TransitionFn:
    """``transition(record, prompts, replies)`` from a CoMLRL ``external_transition`` function.

    ``func`` is called with keywords, as CoMLRL calls it: ``prompt`` (the record's ``"prompt"`` field,
    ``""`` when it has none), ``agent_completions`` (each agent's latest reply), ``num_agents``,
    ``prompt_history_per_agent`` and ``response_history_per_agent`` (each agent's prompts and replies
    so far). It returns every agent's next prompt; the env checks that there is one ``str`` per agent.
    """
    if not callable(func):
        raise TypeError(f"comlrl_transition needs a function, got {func!r:.60}")

    def transition(
        record: Mapping[str, Any], prompts: list[list[str]], replies: list[list[str]]
    ) -> Sequence[str]:
        result: Sequence[str] = func(
            prompt=record.get("prompt", ""),
            agent_completions=[history[-1] for history in replies],
            num_agents=len(replies),
            prompt_history_per_agent=prompts,
            response_history_per_agent=replies,
        )
        return result

    transition.__name__ = transition.__qualname__ = f"comlrl_transition({_name(func)})"
    return transition


def _takes_keyword(func: Callable[..., Any], keyword: str) -> bool:
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it the plain way
        return False
    return any(
        parameter.kind is inspect.Parameter.VAR_KEYWORD
        or (parameter.name == keyword and parameter.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for parameter in parameters
    )


def _name(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if isinstance(name, str) else f"{func!r:.60}"
