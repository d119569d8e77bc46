"""``mrlm/ClassCompletion-v0``: agents share the methods of a class skeleton; the class is tested.

:class:`ClassCompletionEnv` is the parallel form (the default of the registered id),
:class:`ClassCompletionAECEnv` the turn-based one; :func:`parallel_env` and :func:`env` are
PettingZoo-style factories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mrlm.envs.class_completion.game import ClassCompletionGame, Records, agent_names, game_tasks
from mrlm.envs.class_completion.ownership import Assignment
from mrlm.envs.class_completion.scoring import check_weights
from mrlm.envs.core.game_env import GameAECEnv, GameForm, GameParallelEnv, check_turns, cycles_bound_turns
from mrlm.envs.core.sandboxed import Judging
from mrlm.envs.core.text_env import RENDER_MODES
from mrlm.envs.sandbox import Sandbox


class _ClassCompletionArguments(GameForm[ClassCompletionGame]):
    """The arguments of both forms."""

    def __init__(
        self,
        *,
        records: Records | None = None,
        num_agents: int = 2,
        assignment: Assignment = "env",
        max_turns: int | None = 2,
        weights: Mapping[str, float] | None = None,
        idle_penalty: float = 0.2,
        overwrite_penalty: float = 0.1,
        time_limit_s: float = 10.0,
        test_time_limit_s: float = 2.0,
        memory_limit_mb: int = 512,
        feedback_chars: int = 1000,
        sandbox: Sandbox | None = None,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        game = ClassCompletionGame(
            game_tasks(records),
            agent_names(num_agents),
            assignment=assignment,
            max_turns=check_turns(max_turns, max_cycles),
            weights=check_weights(weights),
            idle_penalty=idle_penalty,
            overwrite_penalty=overwrite_penalty,
            judging=Judging(time_limit_s, test_time_limit_s, memory_limit_mb, feedback_chars, sandbox),
        )
        super().__init__(game, max_cycles=max_cycles, render_mode=render_mode)


class ClassCompletionEnv(_ClassCompletionArguments, GameParallelEnv[ClassCompletionGame]):
    """Class completion: agents implement the methods of one class skeleton between them.

    ## Description
    A task is a class skeleton in ClassEval's format: imports, a class docstring, a given
    constructor, and stubs (signature and docstring) of the methods to write; five built-in classes
    ship with the env, and ClassEval records can be loaded. The agents are ``agent_0``,
    ``agent_1``, ...; each step is one round in which every agent replies with method definitions.

    Who writes what (``assignment``):

    - ``"env"``: at reset the methods are shuffled by the seed and dealt round-robin, so the split is
      as even as it can be. An agent may implement only its own methods.
    - ``"agents"``: the agents split the work themselves by what they write. A method belongs to the
      first agent that implements it (earlier rounds first; within a round, the agent listed first),
      for the rest of the episode. In the turn-based form an agent sees what its teammates wrote
      earlier in the round, so it can pick other methods.

    In both, implementing a teammate's method is an overwrite: the writer's version is dropped and it
    pays ``overwrite_penalty``. Copies of the skeleton's stubs implement nothing and are ignored, and
    the constructor stays as given. Private helper methods outside the skeleton are allowed (claimed
    like methods in ``"agents"``); a method whose decorators, defaults or annotations would bind other
    names of the class (``:=``) is dropped, and pays for each teammate's method it would rebind. The
    class keeps each method's latest version from round to round; it is assembled from the skeleton and tested in the sandbox (each ``unittest`` test method is one
    test), never in this process. A round in which no method is implemented runs no test.

    ## Action Space
    ``TextSpace`` per agent: any ``str`` (the model's reply), at most 65536 characters.

    ## Observation Space
    ``Dict({"text": TextSpace})`` per agent: on reset, the skeleton, the split of the work and the
    rules. After a round, the outcome, scores, the agent's penalty and who owns which method and,
    while rounds remain, the assembled class and a failing test (as in ``mrlm/CoopCode-v0``: a test
    quoted once is quoted while it fails, a new one only while another stays unquoted).

    ## Rewards
    The team's score of the class is a weighted sum of components in [0, 1] (``info["components"]``):

    | component | meaning | default weight |
    |---|---|---|
    | ``coverage`` | share of the skeleton's methods implemented | 0.2 |
    | ``tests`` | share of the class's tests passed (1 when all pass; until then a test quoted in earlier feedback counts as failed, ``mrlm.envs.core.disclosure``: returning quoted answers earns nothing) | 0.6 |
    | ``balance`` | how evenly the implemented methods are split: 1 for the most even split, 0 when one agent wrote all (see ``mrlm.envs.class_completion.scoring``) | 0.2 |

    Each agent's reward in a round is the change in the team's score since the previous round (the
    score itself in the first) minus its own penalties of the round: ``idle_penalty`` when it owns
    no implemented method although it could have one, and ``overwrite_penalty`` per teammate's
    method it implemented. An episode's return is the final team score minus the penalties paid.

    ``info`` holds ``team_score``, ``components``, ``counts`` (implemented methods per agent),
    ``owners`` (method -> agent or None), ``implemented``, ``penalties`` (per agent), ``outcome``,
    ``passed``, ``total``, ``all_passed``, ``results`` (one ``{"passed", "error", "timed_out"}`` per
    test), ``quoted_tests`` (indices of the tests quoted so far, this round's feedback included),
    ``message`` and ``program`` (the assembled module), and for the agent itself ``penalty``,
    ``idle``, ``accepted`` (methods it placed this round) and ``overwrites``.

    ## Starting State
    ``reset(seed=s)`` serves class ``s % n`` of the ``n`` classes (seeds ``0 .. n-1`` visit each once;
    ``reset()`` without a seed draws one from the env's seeded generator) and, with
    ``assignment="env"``, draws the deal from ``s``; ``options={"task_id": ...}`` or ``{"index": i}``
    picks the class. The reset ``info`` holds
    ``system_prompt``, ``task_id``, ``source``, ``class_name``, ``methods``, ``assignment``,
    ``assigned`` (the agent's methods, empty with ``"agents"``) and ``num_tests``.

    ## Episode End
    - Termination: every test passes, or ``max_turns`` rounds have been played.
    - Truncation: after ``max_cycles`` rounds, when given.

    ## Arguments
    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/ClassCompletion-v0", num_agents=3, assignment="agents")
    >>> env.possible_agents
    ['agent_0', 'agent_1', 'agent_2']

    | argument | default | meaning |
    |---|---|---|
    | ``records`` | ``None`` | the built-in classes; or ClassEval records (a list of dicts, a JSON or JSONL path, a Dataset) or ``ClassTask`` objects |
    | ``num_agents`` | 2 | team size (at least 2) |
    | ``assignment`` | ``"env"`` | ``"env"`` deals the methods, ``"agents"`` lets the agents claim them |
    | ``max_turns`` | 2 | rounds per episode; None for no limit of its own (``max_cycles`` is then required) |
    | ``weights`` | ``None`` | weights of the team components, over the defaults above |
    | ``idle_penalty`` | 0.2 | charged per round to an agent that owns no implemented method |
    | ``overwrite_penalty`` | 0.1 | charged per teammate's method an agent implements |
    | ``time_limit_s`` | 10.0 | wall and CPU time of one run of the class with all its tests |
    | ``test_time_limit_s`` | 2.0 | time of each test, and of loading the class |
    | ``memory_limit_mb`` | 512 | memory of the process that runs the class |
    | ``feedback_chars`` | 1000 | longest error detail shown after a round |
    | ``sandbox`` | ``None`` | the ``Sandbox`` that runs the classes; by default one shared by the process |
    | ``max_cycles`` | ``None`` | rounds after which the episode is truncated |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns the transcript, ``"human"`` prints it |

    The class runs in a process of its own that exchanges only plain values with the process that
    runs the tests (see ``mrlm.envs.code._harness``): an object that claims to equal anything passes
    no ``assertEqual`` against a value, and the tests, their process and the report are out of the
    class's reach. Known limits of that boundary: an operator between an object of the class and a
    value of the tests (``vector * 2``, ``3 in bag``) compares the object's value as data, so it
    works only for objects that are data (lists, dicts, ...); exceptions of the class's own types
    reach the tests as ``RemoteError``, so ``assertRaises(MyError)`` does not match them.

    ## Version History
    - v0: first version. A seed chooses task ``seed % n``, the rule of every MRLM env with a
      collection of tasks (before, the seed drew it from the generator).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "class_completion_v0",
        "is_parallelizable": True,
    }


class ClassCompletionAECEnv(_ClassCompletionArguments, GameAECEnv[ClassCompletionGame]):
    """The turn-based form of :class:`ClassCompletionEnv`, with the same arguments, rewards and ``info``.

    The agents reply in order (``agent_0`` first), and each one sees the methods its teammates have
    already implemented in the same round. A round ends when the last agent has replied: the
    implementations are then placed (in agent order), the class is tested and scored, and every agent
    receives its reward (``last()`` gives it to each agent at its next turn). Until the next round
    ends, each agent's ``info`` is that of the last judged round (the reset info before the first).
    ``max_cycles`` counts rounds.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": list(RENDER_MODES),
        "name": "class_completion_v0",
        # The turn-based form shows drafts that the parallel form cannot, so it is not parallelizable.
        "is_parallelizable": False,
    }


def parallel_env(**kwargs: Any) -> ClassCompletionEnv:
    """A :class:`ClassCompletionEnv`. As in PettingZoo's own factories, ``max_cycles`` bounds the
    episode: given without ``max_turns``, the env's own round budget is lifted."""
    return ClassCompletionEnv(**cycles_bound_turns(kwargs))


def env(**kwargs: Any) -> ClassCompletionAECEnv:
    """A :class:`ClassCompletionAECEnv`; ``max_cycles`` bounds the episode as in :func:`parallel_env`."""
    return ClassCompletionAECEnv(**cycles_bound_turns(kwargs))
