"""Lists of the source's words, words strung on fillers, and parts that repeat each other score low."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import pytest

from mrlm.envs.writing.abstracts import ABSTRACTS
from mrlm.envs.writing.posts import POSTS
from mrlm.envs.writing.records import load_records
from mrlm.envs.writing.reward import Score, WritingReward
from mrlm.envs.writing.tasks import WritingTask
from mrlm.envs.writing.text import STOPWORDS, tokens
from tests.envs.writing.texts import (
    INTRODUCTION,
    INTRODUCTION_INDEX,
    SPORTS_LONG,
    SPORTS_SHORT,
    TLDR,
    TLDR_INDEX,
)

REWARD = WritingReward()
TLDR_TASKS = load_records(POSTS, "tldr", origin="builtin")
INTRODUCTION_TASKS = load_records(ABSTRACTS, "introduction", origin="builtin")
BUILTIN = [*TLDR_TASKS, *INTRODUCTION_TASKS]
OFF_TOPIC = {"tldr": (SPORTS_SHORT, SPORTS_LONG), "introduction": INTRODUCTION["off_topic"]}
HONEST = {("tldr", TLDR_INDEX): TLDR["good"], ("introduction", INTRODUCTION_INDEX): INTRODUCTION["good"]}


def _score(task: WritingTask, first: str, second: str) -> Score:
    return REWARD(task, {task.roles[0].agent: first, task.roles[1].agent: second})


def _source_words(task: WritingTask) -> list[str]:
    """The source's distinct content words, in order of first use."""
    return list(dict.fromkeys(tok for tok in tokens(task.source) if tok not in STOPWORDS))


def _strung(words: list[str], fillers: Callable[[], str]) -> str:
    return " ".join(f"{word} {fillers()}" for word in words)


def _salad(task: WritingTask) -> tuple[str, str]:
    # As a reply that gets every factor to 1: the same 100 distinct source words in both parts.
    words = " ".join(_source_words(task)[:100])
    return words, words


def _split_salad(task: WritingTask) -> tuple[str, str]:
    words = _source_words(task)
    return " ".join(words[:20]), " ".join(words[20:])


def _cycled(task: WritingTask) -> tuple[str, str]:
    words, fillers = _source_words(task), itertools.cycle(["the", "of", "and"])
    return _strung(words[:20], fillers.__next__), _strung(words[20:], fillers.__next__)


def _random_fillers(task: WritingTask) -> tuple[str, str]:
    words, rng = _source_words(task), random.Random(task.index)
    return _strung(words[:20], lambda: rng.choice(["the", "of", "and"])), _strung(
        words[20:], lambda: rng.choice(["the", "of", "and"])
    )


def _many_fillers(task: WritingTask) -> tuple[str, str]:
    words, fillers = _source_words(task), itertools.cycle(sorted(STOPWORDS))
    return _strung(words[:20], fillers.__next__), _strung(words[20:], fillers.__next__)


ATTACKS = {
    "salad": _salad,
    "split-salad": _split_salad,
    "the-of-and": _cycled,
    "random-the-of-and": _random_fillers,
    "many-fillers": _many_fillers,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("task", BUILTIN, ids=[f"{task.kind}-{task.index}" for task in BUILTIN])
def test_text_that_is_not_prose_scores_below_off_topic_prose(task: WritingTask, attack: str) -> None:
    score = _score(task, *ATTACKS[attack](task))
    off_topic = _score(task, *OFF_TOPIC[task.kind]).total
    assert 0.0 < score.total < off_topic / 2, (score.total, off_topic)
    honest = HONEST.get((task.kind, task.index))
    if honest is not None:
        assert score.total < _score(task, *honest).total / 20
    assert score.components["topicality"] == 1.0  # the source's own words: on topic...
    assert score.components["grammar"] < 0.05  # ...but no prose


@pytest.mark.parametrize("task", BUILTIN, ids=[f"{task.kind}-{task.index}" for task in BUILTIN])
def test_prose_is_not_penalised(task: WritingTask) -> None:
    texts = [task.source, *OFF_TOPIC[task.kind], *(role.reference for role in task.roles if role.reference)]
    texts += [*TLDR["good"], *INTRODUCTION["good"]]
    for text in texts:
        part = _score(task, text, text).per_agent[task.roles[0].agent]
        assert part["function_words"] > 1.4 * REWARD.function_threshold, text
        assert part["function_variety"] > 1.6 * REWARD.variety_threshold, text
        assert part["same_class"] > 1.9 * REWARD.same_class_threshold, text
        assert part["prose"] == 1.0
    assert _score(task, *OFF_TOPIC[task.kind]).components["grammar"] == 1.0


def test_one_part_in_prose_does_not_cover_for_a_list_of_words() -> None:
    task = TLDR_TASKS[TLDR_INDEX]
    good = _score(task, *TLDR["good"])
    listed = _score(task, " ".join(_source_words(task)[:20]), TLDR["good"][1])
    assert listed.total < good.total / 1.5, (listed.total, good.total)
    assert listed.per_agent["summary"]["prose"] == 0.0 and listed.per_agent["expansion"]["prose"] == 1.0
    assert listed.components["prose"] == 0.5
    assert listed.components["grammar"] == pytest.approx(REWARD.prose_floor + (1 - REWARD.prose_floor) / 2)


@pytest.mark.parametrize("which", [0, 1], ids=["background-twice", "contribution-twice"])
def test_identical_parts_score_like_a_copy(which: int) -> None:
    task = INTRODUCTION_TASKS[INTRODUCTION_INDEX]
    good = _score(task, *INTRODUCTION["good"]).total
    text = INTRODUCTION["good"][which]
    twice = _score(task, text, text)
    # Changing one sentence of the copy leaves most of it repeated.
    rest = text.split(". ")[1:]
    edited = ". ".join(["A different opening sentence about the same farms and their water", *rest])
    near = _score(task, text, edited)
    assert twice.total < good / 2 and near.total < good / 1.5, (twice.total, near.total, good)
    assert twice.components["echoed"] == 1.0 and twice.components["copied"] < 0.1
    assert twice.components["originality"] == pytest.approx(1 - REWARD.copy_weight)
    assert near.components["echoed"] > 0.7


def test_quoting_the_summary_in_the_expansion_costs_in_proportion() -> None:
    task = TLDR_TASKS[TLDR_INDEX]
    summary, expansion = TLDR["good"]
    quoted = f"{summary} {expansion}"
    score = _score(task, summary, quoted)
    n_summary, n_quoted = len(tokens(summary)), len(tokens(quoted))
    # The summary's tokens count once in each part.
    assert score.per_agent["summary"]["echoed"] == 1.0
    assert score.components["echoed"] == pytest.approx(2 * n_summary / (n_summary + n_quoted))
    assert score.components["originality"] == pytest.approx(
        1 - REWARD.copy_weight * score.components["echoed"]
    )
    assert 0.7 * _score(task, summary, expansion).total < score.total
