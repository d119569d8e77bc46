"""``mrlm/TeamSum-v0``: every member answers its own small sum; the team is right only together.

:class:`TeamSumEnv` is the parallel form (every member replies at once), :class:`TeamSumAECEnv` the
turn-based form (members reply in order, and none sees another's question or reply). ``env()`` and
``parallel_env()`` build them, as in PettingZoo's own env modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mrlm.envs.core.game_env import GameAECEnv, GameForm, GameParallelEnv
from mrlm.envs.core.text_env import RENDER_MODES
from mrlm.envs.team_sum.game import Part, TeamSumGame, TeamSumRules

_METADATA: dict[str, Any] = {
    "render_modes": list(RENDER_MODES),
    "name": "team_sum_v0",
    "is_parallelizable": True,
}


class _TeamSumArguments(GameForm[TeamSumGame]):
    """The arguments of both forms, and what a trainer reads of an episode to demonstrate it."""

    def __init__(
        self,
        *,
        num_agents: int = 2,
        low: int = 1,
        high: int = 9,
        operations: str | Sequence[str] = ("+",),
        correct_reward: float = 1.0,
        format_reward: float = 0.0,
        rounds: int | None = None,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        rules = TeamSumRules.build(
            num_agents=num_agents,
            low=low,
            high=high,
            operations=operations,
            correct_reward=correct_reward,
            format_reward=format_reward,
            rounds=rounds,
            max_cycles=max_cycles,
        )
        super().__init__(TeamSumGame(rules), max_cycles=max_cycles, render_mode=render_mode)

    @property
    def rules(self) -> TeamSumRules:
        return self.game.rules

    @property
    def parts(self) -> dict[str, Part]:
        """Each agent's part of this episode, ``agent -> (x, op, y, value)``."""
        return dict(self.game.parts)

    def demonstration(self, agent: str) -> str:
        """A reply of ``agent`` that earns its share of the answer: ``"3 + 5 = 8. \\boxed{8}"``."""
        return self.game.parts[agent].demonstration


class TeamSumEnv(_TeamSumArguments, GameParallelEnv[TeamSumGame]):
    """Team sums: each member is asked its own small sum; the team's answer is the sum of their values.

    | | |
    |---|---|
    | Agents | ``first``, ``second`` (then ``third``, ``fourth`` with ``num_agents`` 3, 4) |
    | Parallel API | yes (this class); AEC form: :class:`TeamSumAECEnv` |
    | Action space | ``TextSpace``: any ``str`` (the member's reply), at most 65,536 characters |
    | Observation space | ``Dict({"text": TextSpace})`` |

    ## Description
    A cooperative game small enough for a tiny model. Each member is dealt one part, ``x op y`` with
    ``x`` and ``y`` drawn uniformly from ``[low, high]`` and ``op`` from ``operations``, and sees
    only its own part, asked as Math-v0 asks its integer questions (``"What is 3 + 5?"``). The team
    is right when the values its members give add up to the sum of every part's value, so no member
    can answer for another: the team succeeds only together. Only the sum is judged, so errors that
    cancel still count as right; the reward is the team's.

    ``env.unwrapped.parts`` (``agent -> (x, op, y, value)``) and ``env.unwrapped.demonstration(agent)``
    (``"3 + 5 = 8. \\boxed{8}"``) give what a trainer needs to build demonstrations of an episode.

    ## Action Space
    ``TextSpace``: the member's reply. Its value is the integer in its last ``\\boxed{}`` (found as
    Math-v0 finds it, then read as one exact number); a reply without one, or whose box holds
    anything but an integer, gives no value. Anything is accepted: empty, huge, any characters.

    ## Observation Space
    ``{"text": str}``: the member's question; after the team has replied, whether it was right
    (the gold values are not shown), followed by the next round's question while rounds remain.

    ## Rewards
    Shared: every member gets the same reward, ``correct_reward`` (1.0) when every member gave a
    boxed integer and their sum equals the team's answer, else 0.0; plus ``format_reward`` (0.0)
    when every member gave a boxed integer, right or wrong. The ``info`` after the step holds, per
    member, ``answer`` (its part's value), ``given`` (its value, or None), ``team_answer``,
    ``team_given`` (None unless every member gave a value) and ``correct``. With several rounds, each
    round is judged and paid on its own.

    ## Starting State
    ``reset(seed=s)`` draws every part from ``s``, in agent order (each later round draws its parts
    from the same stream); the same seed always gives the same parts. ``reset()`` without a seed continues the env's seeded stream. The reset ``info`` of
    every member holds ``system_prompt``: that it is one of a team of ``n``, that the team's answer is
    the sum of every member's value, and that its own value goes in ``\\boxed{answer}``.

    ## Episode End
    - Termination: after ``rounds`` joint replies (one by default; in the AEC form, after the last
      member's reply of the last round).
    - Truncation: after ``max_cycles`` rounds, when that comes first.

    ## Arguments
    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/TeamSum-v0")
    >>> observations, infos = env.reset(seed=0)
    >>> env.agents, observations["first"]["text"].startswith("What is ")
    (['first', 'second'], True)
    >>> replies = {agent: env.demonstration(agent) for agent in env.agents}
    >>> _, rewards, terminations, _, infos = env.step(replies)
    >>> rewards, terminations, infos["first"]["correct"]
    ({'first': 1.0, 'second': 1.0}, {'first': True, 'second': True}, True)

    | argument | default | meaning |
    |---|---|---|
    | ``num_agents`` | 2 | members of the team, 2-4 |
    | ``low``, ``high`` | 1, 9 | operands are drawn from ``[low, high]``, within ``[0, 99]`` |
    | ``operations`` | ``("+",)`` | operators to draw from: ``"+"``, ``"-"`` (a difference may be negative) |
    | ``correct_reward`` | 1.0 | every member's reward when the team is right |
    | ``format_reward`` | 0.0 | added when every member gave a boxed integer, right or wrong |
    | ``rounds`` | ``None`` | rounds (new parts each); None: ``max_cycles`` if given (as in PettingZoo), else 1 |
    | ``max_cycles`` | ``None`` | rounds after which the episode is truncated |
    | ``render_mode`` | ``None`` | ``"ansi"``: the transcript (replies, the team's result); ``"human"`` prints it |

    ## Version History
    - v0: two to four members, sums and differences of operands up to 99, one joint reply; then
      ``rounds`` and ``max_cycles`` (one round by default, as before).
    """

    metadata: ClassVar[dict[str, Any]] = dict(_METADATA)


class TeamSumAECEnv(_TeamSumArguments, GameAECEnv[TeamSumGame]):
    """Team sums, turn by turn: :class:`TeamSumEnv` with members replying in agent order.

    A member's reply is not shown to the others, so the order changes nothing of the game; the team
    is judged after the last reply, and every member then receives the team's reward. Everything
    else (arguments, observations, rewards, infos) is as in :class:`TeamSumEnv`.

    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/TeamSum-v0", kind="aec", num_agents=3)
    >>> env.reset(seed=0)
    >>> env.agent_selection, env.possible_agents
    ('first', ['first', 'second', 'third'])
    """

    metadata: ClassVar[dict[str, Any]] = dict(_METADATA)


def env(**kwargs: Any) -> TeamSumAECEnv:
    """The AEC form; keyword arguments as :class:`TeamSumEnv`."""
    return TeamSumAECEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TeamSumEnv:
    """The parallel form; keyword arguments as :class:`TeamSumEnv`."""
    return TeamSumEnv(**kwargs)
