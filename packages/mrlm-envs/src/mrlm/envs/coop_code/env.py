"""``mrlm/CoopCode-v0``: agents write the functions of one program; the team is rewarded by its tests.

:class:`CoopCodeEnv` is the parallel form (the default of the registered id), :class:`CoopCodeAECEnv`
the turn-based one; :func:`parallel_env` and :func:`env` are PettingZoo-style factories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mrlm.envs.coop_code.game import CoopCodeGame, Records, game_tasks
from mrlm.envs.coop_code.judging import check_weights
from mrlm.envs.coop_code.tasks import agent_names
from mrlm.envs.core.game_env import GameAECEnv, GameForm, GameParallelEnv, check_turns, cycles_bound_turns
from mrlm.envs.core.sandboxed import Judging
from mrlm.envs.core.text_env import RENDER_MODES
from mrlm.envs.sandbox import Sandbox


class _CoopCodeArguments(GameForm[CoopCodeGame]):
    """The arguments of both forms."""

    def __init__(
        self,
        *,
        records: Records | None = None,
        num_agents: int = 2,
        helper_name: str = "aux",
        max_turns: int | None = 2,
        weights: Mapping[str, float] | None = None,
        time_limit_s: float = 10.0,
        test_time_limit_s: float = 2.0,
        memory_limit_mb: int = 512,
        feedback_chars: int = 1000,
        sandbox: Sandbox | None = None,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        agents = agent_names(num_agents)
        game = CoopCodeGame(
            game_tasks(records, len(agents), helper_name),
            agents,
            max_turns=check_turns(max_turns, max_cycles),
            weights=check_weights(weights),
            judging=Judging(time_limit_s, test_time_limit_s, memory_limit_mb, feedback_chars, sandbox),
        )
        super().__init__(game, max_cycles=max_cycles, render_mode=render_mode)


class CoopCodeEnv(_CoopCodeArguments, GameParallelEnv[CoopCodeGame]):
    """Cooperative coding: each agent writes one function of a program, and the team is tested.

    ## Description
    A task is a small program split into functions that call one another. With two agents,
    ``helper`` writes a helper function and ``main`` writes the main function, which the hidden
    tests call and which must use the helper's result; with three, ``helper_1`` and ``helper_2``
    write helpers (twelve built-in problems: nine for two agents, three for three). Parts records
    (the built-ins' format, ``data/problems.jsonl`` in the package) give each part; HumanEval,
    CoopHumanEval and MBPP records are split the way cooperative HumanEval setups do it: ``helper``
    writes a function named ``aux`` (``helper_name``) with a signature of its choosing, and ``main``
    writes the record's entry point, told to call ``aux``.

    Each step is one attempt. The code of each reply is extracted as in ``mrlm/Code-v0`` (a bare
    function body completes the part's stub). Every top-level statement of a reply that binds a
    teammate's function name (its ``def``, an assignment, a ``global``) is dropped, so no agent can
    replace a teammate's part. The parts are assembled in agent order after the task's context, and
    the program runs with the tests in the sandbox, never in this process. After a failed attempt
    every agent sees the assembled program, a failing test or error, and what went wrong
    (a part missing, a definition dropped, a helper not used), and the team tries again.

    ## Action Space
    ``TextSpace`` per agent: any ``str`` (the model's reply), at most 65536 characters.

    ## Observation Space
    ``Dict({"text": TextSpace})`` per agent: on reset, the task, the agent's own part (its stub or
    description, and which teammates' functions it must call) and its teammates' parts. After an
    attempt, the outcome and component scores and, while turns remain, the program and what to fix.

    ## Rewards
    The team's score of an attempt is a weighted sum of components in [0, 1] (``info["components"]``):

    | component | meaning | default weight |
    |---|---|---|
    | ``defined`` | share of parts whose owner's code defines them | 0.1 |
    | ``compiles`` | 1 when every part is defined and the program compiles | 0.1 |
    | ``tests`` | share of the tests passed (1 when all pass; until then a test quoted in earlier feedback counts as failed) | 0.5 |
    | ``uses`` | share of required calls really made: the helper defined, called where the call can run and reach it (not in dead code, not to a local of the same name), its result used, and the caller not a mere wrapper (``return helper(x)``); read from the code, not from a run | 0.3 |

    Every agent gets the same reward: the change in the team's score since the previous attempt
    (the score itself on the first), so an episode's return is the score of its last attempt. A
    correct cooperative program scores 1; one whose main function ignores the helper loses the
    ``uses`` weight even when every test passes. A failing test quoted in feedback (its input and
    expected value) counts as failed in later attempts' ``tests`` until all pass, and one test at
    least is never quoted (the feedback then says only that a test not shown failed): returning
    quoted answers earns nothing and the same program sent again never scores more
    (``mrlm.envs.core.disclosure``).

    ``info`` (the same for every agent) holds ``score``, ``components``, ``usages`` (``"caller ->
    callee"``: ``used``, ``not_called``, ``result_ignored``, ``wrapper``, ``not_defined`` or
    ``helper_not_defined``), ``outcome``, ``passed``, ``total``, ``all_passed``, ``results`` (one
    ``{"passed", "error", "timed_out"}`` per test), ``quoted_tests`` (indices of the tests quoted so
    far, this attempt's feedback included), ``message``, ``parts`` (per agent: its
    ``function``, ``defined``, ``parses``, ``dropped``) and ``program`` (the assembled source).

    ## Starting State
    ``reset(seed=s)`` serves task ``s % n`` of the ``n`` tasks (seeds ``0 .. n-1`` visit each once);
    ``reset()`` without a seed draws one from the env's seeded generator; ``options={"task_id": ...}``
    or ``{"index": i}`` picks one. The reset ``info`` of each agent holds ``system_prompt``, ``task_id``, ``source``,
    ``function`` (its part), ``owners`` (function -> agent) and ``num_tests``.

    ## Episode End
    - Termination: every test passes, or ``max_turns`` attempts have been made.
    - Truncation: after ``max_cycles`` attempts, when given.

    ## Arguments
    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/CoopCode-v0", num_agents=3, max_turns=1)
    >>> env.possible_agents
    ['helper_1', 'helper_2', 'main']

    | argument | default | meaning |
    |---|---|---|
    | ``records`` | ``None`` | built-in problems; or parts/HumanEval/CoopHumanEval/MBPP records (a list of dicts, a JSONL path or a Dataset), or ``CoopTask``/``CodeTask`` objects |
    | ``num_agents`` | 2 | team size; every task must have that many parts (records give two) |
    | ``helper_name`` | ``"aux"`` | the helper's name in tasks made from records |
    | ``max_turns`` | 2 | attempts per episode; None for no limit of its own (``max_cycles`` is then required) |
    | ``weights`` | ``None`` | weights of the components, over the defaults above |
    | ``time_limit_s`` | 10.0 | wall and CPU time of one run of the program with all its tests |
    | ``test_time_limit_s`` | 2.0 | time of each test, and of loading the program |
    | ``memory_limit_mb`` | 512 | memory of the process that runs the program |
    | ``feedback_chars`` | 1000 | longest error detail shown after an attempt |
    | ``sandbox`` | ``None`` | the ``Sandbox`` that runs the programs; by default one shared by the process |
    | ``max_cycles`` | ``None`` | attempts after which the episode is truncated |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    ## Version History
    - v0: first version. A seed chooses task ``seed % n``, the rule of every MRLM env with a
      collection of tasks (before, the seed drew it from the generator).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "coop_code_v0",
        "is_parallelizable": True,
    }


class CoopCodeAECEnv(_CoopCodeArguments, GameAECEnv[CoopCodeGame]):
    """The turn-based form of :class:`CoopCodeEnv`, with the same arguments, rewards and ``info``.

    The agents reply in part order (helpers first, ``main`` last), and each one sees the code its
    teammates have already written in the same round, so later agents can build on earlier ones. A
    round ends when the last agent has replied: the program is then assembled, tested and scored, and
    every agent receives the reward (``last()`` gives it to each agent at its next turn). Until the
    next round ends, each agent's ``info`` is that of the last judged attempt (the reset info before
    the first). ``max_cycles`` counts rounds.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "coop_code_v0",
        # The turn-based form shows drafts that the parallel form cannot, so it is not parallelizable.
        "is_parallelizable": False,
    }


def parallel_env(**kwargs: Any) -> CoopCodeEnv:
    """A :class:`CoopCodeEnv`. As in PettingZoo's own factories, ``max_cycles`` bounds the episode:
    given without ``max_turns``, the env's own turn budget is lifted."""
    return CoopCodeEnv(**cycles_bound_turns(kwargs))


def env(**kwargs: Any) -> CoopCodeAECEnv:
    """A :class:`CoopCodeAECEnv`; ``max_cycles`` bounds the episode as in :func:`parallel_env`."""
    return CoopCodeAECEnv(**cycles_bound_turns(kwargs))
