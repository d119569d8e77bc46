"""``mrlm/Writing-v0``: two agents write complementary parts of one text; the team shares the reward.

:class:`WritingEnv` is the parallel form (both agents write each round at once), :class:`WritingAECEnv`
the turn-based form (the second agent of a round already sees the first one's new part). ``env()``
and ``parallel_env()`` build them, as in PettingZoo's own env modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from mrlm.envs.core.game_env import GameAECEnv, GameForm, GameParallelEnv
from mrlm.envs.core.text_env import RENDER_MODES
from mrlm.envs.writing.game import WritingGame
from mrlm.envs.writing.records import Records
from mrlm.envs.writing.reward import RewardFn

_METADATA: dict[str, Any] = {
    "render_modes": list(RENDER_MODES),
    "name": "writing_v0",
    "is_parallelizable": True,
}


class _WritingArguments(GameForm[WritingGame]):
    """The arguments of both forms."""

    def __init__(
        self,
        *,
        task: str = "tldr",
        records: Records | None = None,
        rounds: int | None = None,
        reward_fn: RewardFn | None = None,
        length_bands: Mapping[str, tuple[int, int]] | None = None,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        game = WritingGame.build(
            task=task,
            records=records,
            rounds=rounds,
            max_cycles=max_cycles,
            reward_fn=reward_fn,
            length_bands=length_bands,
        )
        super().__init__(game, max_cycles=max_cycles, render_mode=render_mode)


class WritingEnv(_WritingArguments, GameParallelEnv[WritingGame]):
    """Cooperative writing: two agents write complementary parts of one text from a source.

    | | |
    |---|---|
    | Agents | ``tldr``: ``summary``, ``expansion``; ``introduction``: ``background``, ``contribution`` |
    | Parallel API | yes (this class); AEC form: :class:`WritingAECEnv` |
    | Action space | ``TextSpace``: any ``str`` (the agent's part), at most 65,536 characters |
    | Observation space | ``Dict({"text": TextSpace})`` |

    ## Description
    ``task="tldr"``: from a forum post, ``summary`` writes a TL;DR (8-35 words) and ``expansion`` a
    longer version of the post (70-220 words). ``task="introduction"``: from a paper's abstract,
    ``background`` writes the motivation paragraph (50-160 words) and ``contribution`` the
    contributions paragraph (40-140 words). Tasks come from built-in collections written for the
    project (12 posts with reference TL;DRs, 8 abstracts) or from records: TL;DR ``prompt``/
    ``completion`` dicts, or ``abstract``/``title`` dicts (optionally with reference ``background``
    and ``contribution`` paragraphs), from a list, a JSONL path or a ``datasets.Dataset``.

    With ``rounds > 1`` the agents revise: each round they see their teammate's latest part and the
    team score of the previous round.

    ## Action Space
    ``TextSpace``: the agent's part as plain text. Anything is accepted: empty, huge, control
    characters; bad text simply scores low.

    ## Observation Space
    ``{"text": str}``: the task, the agent's role and length band, the teammate's role and band, the
    round, the source (title, subreddit, ``=== Post ===`` or ``=== Abstract ===`` then the text), and
    from the second round the teammate's latest part, the agent's previous part and the last team
    score. After the last round: a closing line with the team score.

    ## Rewards
    Shared: both agents get the same reward. Each round the joint text is scored by ``reward_fn``
    (default :class:`~mrlm.envs.writing.reward.WritingReward`: length bands, length ratio, overlap
    with the source, coherence between the parts, ROUGE against the reference when there is one,
    gated by topicality, fluency (lexical diversity, and function words used as prose uses them)
    and originality (no copying from the source or between the parts); a score in [0, 1]). The
    reward of round ``r`` is ``score_r - score_(r-1)``, so an episode's rewards sum to the final
    score. Every step's ``info`` holds ``round``, ``score``, ``reward``, ``components`` (team-wide)
    and ``agent_components`` (this agent's part: ``words``, ``length``, ``distinct_1``, ...).

    ## Starting State
    ``reset(seed=s)`` serves task ``s % n`` of the collection (seeds ``0..n-1`` visit every task once);
    ``reset()`` without a seed draws a task from the env's seeded stream; ``options={"index": i}``
    serves task ``i`` (other option keys are ignored). The reset ``info`` holds ``task``, ``index``,
    ``origin``, ``title``, ``role``, ``length_band``, ``rounds`` and ``has_reference``.

    ## Episode End
    - Termination: after ``rounds`` rounds.
    - Truncation: after ``max_cycles`` rounds, when that comes first.

    ## Arguments
    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/Writing-v0", kind="parallel")
    >>> observations, infos = env.reset(seed=0)
    >>> env.agents, infos["summary"]["length_band"]
    (['summary', 'expansion'], [8, 35])
    >>> _, rewards, terminations, _, infos = env.step({"summary": "", "expansion": ""})
    >>> rewards, terminations["summary"], infos["summary"]["components"]["length"]
    ({'summary': 0.0, 'expansion': 0.0}, True, 0.0)

    | argument | default | meaning |
    |---|---|---|
    | ``task`` | ``"tldr"`` | ``"tldr"`` or ``"introduction"`` |
    | ``records`` | ``None`` | records of that task (list, JSONL path, ``Dataset``) instead of the built-ins |
    | ``rounds`` | ``None`` | rounds of writing; None: ``max_cycles`` if given (as in PettingZoo), else 1 |
    | ``reward_fn`` | ``None`` | ``reward_fn(task, parts)`` returning a ``Score`` or ``(total, components)`` |
    | ``length_bands`` | ``None`` | ``{agent: (min_words, max_words)}`` replacing the default bands |
    | ``max_cycles`` | ``None`` | rounds after which the episode is truncated |
    | ``render_mode`` | ``None`` | ``"ansi"``: the transcript (parts, round scores); ``"human"`` prints it |

    ## Version History
    - v0: TL;DR and introduction tasks, built-in and from records; pluggable reward; revision rounds.
    """

    metadata: ClassVar[dict[str, Any]] = dict(_METADATA)


class WritingAECEnv(_WritingArguments, GameAECEnv[WritingGame]):
    """Cooperative writing, turn by turn: :class:`WritingEnv` with agents acting in order.

    The first agent of each round writes, then the second, who already sees the first agent's new
    part; the round is scored after the second part and both agents receive the round's reward.
    Everything else (tasks, arguments, observations, rewards, infos, episode end) is as in
    :class:`WritingEnv`; ``max_cycles`` counts rounds (each agent acting once).

    >>> import mrlm.envs
    >>> env = mrlm.envs.make("mrlm/Writing-v0", kind="aec", task="introduction")
    >>> env.reset(seed=1)
    >>> env.agent_selection, env.infos["background"]["length_band"]
    ('background', [50, 160])
    """

    metadata: ClassVar[dict[str, Any]] = dict(_METADATA)


def env(**kwargs: Any) -> WritingAECEnv:
    """The AEC form; keyword arguments as :class:`WritingEnv`."""
    return WritingAECEnv(**kwargs)


def parallel_env(**kwargs: Any) -> WritingEnv:
    """The parallel form; keyword arguments as :class:`WritingEnv`."""
    return WritingEnv(**kwargs)
