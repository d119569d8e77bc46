"""``mrlm/Debate-v0``: debaters argue for and against a motion over several rounds; a judge decides.

:class:`DebateEnv` is the turn-based (AEC) form, :class:`DebateParallelEnv` the simultaneous one;
:func:`env` and :func:`parallel_env` build them (PettingZoo's module convention).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from mrlm.envs.core.game_env import GameAECEnv, GameForm, GameParallelEnv
from mrlm.envs.core.spaces import DEFAULT_MAX_ACTION_LENGTH, DEFAULT_MAX_OBSERVATION_LENGTH
from mrlm.envs.core.text_env import RENDER_MODES
from mrlm.envs.debate.game import DEFAULT_MAX_TURN_CHARS, DEFAULT_ROUNDS, DebateGame, RewardMode
from mrlm.envs.debate.judging import Judge
from mrlm.envs.debate.motions import check_motions
from mrlm.envs.debate.rule_judge import RuleBasedJudge


class _DebateArguments(GameForm[DebateGame]):
    """The arguments of both forms."""

    def __init__(
        self,
        *,
        topics: Iterable[str] | None = None,
        rounds: int = DEFAULT_ROUNDS,
        debaters_per_side: int = 1,
        judge: Judge | None = None,
        reward_mode: RewardMode = "zero_sum",
        max_turn_chars: int = DEFAULT_MAX_TURN_CHARS,
        max_cycles: int | None = None,
        max_action_length: int = DEFAULT_MAX_ACTION_LENGTH,
        render_mode: str | None = None,
    ) -> None:
        motions = check_motions(topics)
        # With a rule-based judge, per-turn feedback uses the same instance, so both agree on every number.
        judge = RuleBasedJudge() if judge is None else judge
        game = DebateGame(
            motions=motions,
            rounds=rounds,
            debaters_per_side=debaters_per_side,
            judge=judge,
            scorer=judge if isinstance(judge, RuleBasedJudge) else RuleBasedJudge(),
            reward_mode=reward_mode,
            max_turn_chars=max_turn_chars,
            simultaneous=self.simultaneous,
            max_observation_chars=DEFAULT_MAX_OBSERVATION_LENGTH,
        )
        super().__init__(
            game,
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_observation_length=DEFAULT_MAX_OBSERVATION_LENGTH,
            max_action_length=max_action_length,
        )


class DebateEnv(_DebateArguments, GameAECEnv[DebateGame]):
    """A debate between PRO and CON over several rounds, judged at the end; debaters take turns.

    ## Description
    Each episode debates one motion, chosen by the seed from :data:`~mrlm.envs.debate.motions.MOTIONS`
    (32 motions written for MRLM) or from ``topics``. PRO argues for the motion, CON against it. Every
    round each debater speaks once, in the order ``pro, con`` (teams: ``pro_0, con_0, pro_1, con_1, ...``);
    the first round is the opening, the last the closing, the rounds between are rebuttals. Every
    speech is cleaned (control characters dropped) and clipped to ``max_turn_chars``, then scored by
    :class:`~mrlm.envs.debate.rule_judge.RuleBasedJudge` for feedback. After the closing round the
    ``judge`` decides the debate. :class:`DebateParallelEnv` is the same debate with everyone in a round
    speaking at once.

    ## Action Space
    ``TextSpace``: the speech, any ``str`` of at most ``max_action_length`` characters (longer ones are
    refused with ``ValueError``, as by every MRLM text env); only the first ``max_turn_chars`` count.

    ## Observation Space
    ``Dict({"text": TextSpace})``: the motion, the agent's side (and teammates), the phase with its
    task, and the transcript heard so far (the oldest turns are left out should it outgrow the space).
    After the end, the outcome replaces the phase.

    ## Rewards
    Paid once, after the last speech, to every agent; 0 before.

    | ``reward_mode`` | winning side | losing side | tie |
    |---|---|---|---|
    | ``"zero_sum"`` | +1 | -1 | 0 |
    | ``"scores"`` | its score in [0, 1] | its score in [0, 1] | the scores |

    ``info`` of the speaker after each speech: ``turn_score`` (rule score in [0, 1]), ``turn_feedback``
    (its components and faults), ``round``, ``phase``, ``clipped``. At the end every agent's ``info``
    adds ``verdict`` (scores, winner, turn scores, judge, rationale, error), ``winner`` and
    ``side_score``. A judge failure with no fallback raises ``JudgeError`` from ``step``.

    ## Starting State
    ``reset(seed=s)`` debates motion ``s % n`` of the ``n`` motions (seeds ``0 .. n-1`` visit each
    once); ``reset()`` without a seed draws one from the env's seeded generator;
    ``options={"motion": "..."}`` debates a given motion and ``options={"index": i}`` motion ``i``
    (other option keys are ignored).
    ``info``: ``motion``, ``side``, ``teammates``, ``phases``.

    ## Episode End
    - Termination: after the closing speech of the last debater.
    - Truncation: after ``max_cycles`` rounds when that is fewer than ``rounds``; no verdict, no reward.

    ## Arguments
    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/Debate-v0", rounds=2)
    >>> env.reset(seed=0)
    >>> env.agents, env.agent_selection
    (['pro', 'con'], 'pro')

    | argument | default | meaning |
    |---|---|---|
    | ``topics`` | ``None`` | motions to draw from; None for the built-in list |
    | ``rounds`` | 4 | speaking rounds: an opening, ``rounds - 2`` rebuttals, a closing (>= 2) |
    | ``debaters_per_side`` | 1 | debaters per side; above 1 agents are ``pro_0, con_0, ...`` |
    | ``judge`` | ``None`` | a :class:`~mrlm.envs.debate.judging.Judge`; None for ``RuleBasedJudge()`` |
    | ``reward_mode`` | ``"zero_sum"`` | ``"zero_sum"`` or ``"scores"`` (see Rewards) |
    | ``max_turn_chars`` | 4000 | characters of each speech kept and judged |
    | ``max_cycles`` | ``None`` | rounds after which the episode is truncated |
    | ``max_action_length`` | 65536 | longest speech accepted |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: opening, rebuttal and closing rounds; teams; rule-based and model judges; two reward modes.
      A seed chooses motion ``seed % n``, the rule of every MRLM env with a collection of tasks
      (before, the seed drew it from the generator).
    """

    # Converting this env with aec_to_parallel would let a debater hear speeches of its own round
    # one step late; DebateParallelEnv is the simultaneous form.
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "debate_v0",
        "is_parallelizable": False,
    }


class DebateParallelEnv(_DebateArguments, GameParallelEnv[DebateGame]):
    """The debate of :class:`DebateEnv`, with everyone in a round speaking at once.

    One ``step`` is one round: every debater gives a speech, having heard the earlier rounds only.
    Arguments, spaces, rewards, ``info`` and the episode end are those of :class:`DebateEnv` (with
    ``max_cycles`` counting steps, which are rounds here).

    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/Debate-v0", kind="parallel", debaters_per_side=2)
    >>> observations, infos = env.reset(seed=0)
    >>> sorted(observations), infos["con_1"]["teammates"]
    (['con_0', 'con_1', 'pro_0', 'pro_1'], ['con_0'])
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "debate_v0",
        "is_parallelizable": True,
    }


def env(**kwargs: Any) -> DebateEnv:
    """The turn-based debate; keyword arguments as :class:`DebateEnv`."""
    return DebateEnv(**kwargs)


def parallel_env(**kwargs: Any) -> DebateParallelEnv:
    """The simultaneous debate; keyword arguments as :class:`DebateParallelEnv`."""
    return DebateParallelEnv(**kwargs)
