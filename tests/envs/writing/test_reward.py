"""The default reward orders typical teams as it should, reports its components, and survives abuse."""

from __future__ import annotations

import math

import pytest

from mrlm.envs.writing.abstracts import ABSTRACTS
from mrlm.envs.writing.posts import POSTS
from mrlm.envs.writing.records import load_records
from mrlm.envs.writing.reward import DEFAULT_WEIGHTS, Score, WritingReward, as_score
from mrlm.envs.writing.tasks import WritingTask
from tests.envs.writing.texts import INTRODUCTION, INTRODUCTION_INDEX, TLDR, TLDR_INDEX

REWARD = WritingReward()
TLDR_TASK = load_records(POSTS, "tldr", origin="builtin")[TLDR_INDEX]
INTRODUCTION_TASK = load_records(ABSTRACTS, "introduction", origin="builtin")[INTRODUCTION_INDEX]

TEAM_COMPONENTS = {
    "length",
    "diversity",
    "overlap",
    "copied",
    "echoed",
    "function_words",
    "function_variety",
    "same_class",
    "prose",
    "ratio",
    "coherence",
    "quality",
    "topicality",
    "grammar",
    "fluency",
    "originality",
}
PART_COMPONENTS = {
    "words",
    "length",
    "distinct_1",
    "distinct_2",
    "diversity",
    "unigram_overlap",
    "bigram_overlap",
    "overlap",
    "copied",
    "echoed",
    "function_words",
    "function_variety",
    "same_class",
    "prose",
}


def _score(task: WritingTask, first: str, second: str) -> Score:
    return REWARD(task, {task.roles[0].agent: first, task.roles[1].agent: second})


@pytest.mark.parametrize(
    ("task", "texts"), [(TLDR_TASK, TLDR), (INTRODUCTION_TASK, INTRODUCTION)], ids=["tldr", "introduction"]
)
def test_good_beats_copy_beats_off_topic_beats_repetition_beats_nothing(
    task: WritingTask, texts: dict[str, tuple[str, str]]
) -> None:
    totals = {
        "good": _score(task, *texts["good"]).total,
        "copy": _score(task, task.source, task.source).total,
        "off_topic": _score(task, *texts["off_topic"]).total,
        "repeated": _score(task, *texts["repeated"]).total,
        "empty": _score(task, *texts["empty"]).total,
    }
    ordered = list(totals.values())
    assert ordered == sorted(ordered, reverse=True) and len(set(ordered)) == len(ordered), totals
    assert totals["good"] > 0.6  # a good text is clearly rewarded...
    assert totals["good"] > 1.5 * totals["copy"]  # ...far above pasting the source
    assert totals["repeated"] < 0.01 and totals["empty"] == 0.0


def test_what_each_guard_catches() -> None:
    copy = _score(TLDR_TASK, TLDR_TASK.source, TLDR_TASK.source).components
    assert copy["copied"] == 1.0 and copy["originality"] == pytest.approx(1 - REWARD.copy_weight)
    assert copy["overlap"] == 1.0 and copy["topicality"] == 1.0
    off = _score(TLDR_TASK, *TLDR["off_topic"]).components
    assert off["overlap"] < 0.05 and off["topicality"] < 0.2 and off["fluency"] == 1.0
    repeated = _score(TLDR_TASK, *TLDR["repeated"]).components
    assert repeated["diversity"] < 0.05 and repeated["fluency"] < 0.01 and repeated["topicality"] == 1.0
    good = _score(TLDR_TASK, *TLDR["good"]).components
    assert good["topicality"] == good["fluency"] == 1.0 and good["originality"] > 0.95


def test_components_by_hand() -> None:
    # A 40-word summary (band 8-35) and a 35-word expansion (band 70-220):
    # length = mean(1 - 5/35, 35/70) ; ratio = 35/40 against the band [3, 20] -> (35/40) / 3.
    summary = " ".join(f"s{i}" for i in range(40))
    expansion = " ".join(f"e{i}" for i in range(35))
    score = _score(TLDR_TASK, summary, expansion)
    own = score.per_agent["summary"]
    assert own["words"] == 40 and own["length"] == pytest.approx(1 - 5 / 35)
    assert score.per_agent["expansion"]["length"] == pytest.approx(0.5)
    assert score.components["length"] == pytest.approx((1 - 5 / 35 + 0.5) / 2)
    assert score.components["ratio"] == pytest.approx((35 / 40) / 3)
    # All tokens differ: distinct-1 = distinct-2 = 1 for both parts.
    assert own["distinct_1"] == own["distinct_2"] == own["diversity"] == 1.0
    assert score.components["coherence"] == 0.0 and score.components["overlap"] == 0.0
    # quality = 0.35 * length + 0.15 * ratio + 0.2 * coherence + 0.3 * rouge (0 here), weights sum to 1.
    quality = 0.35 * score.components["length"] + 0.15 * score.components["ratio"]
    assert score.components["quality"] == pytest.approx(quality)
    # No function words: not prose, so grammar is its floor, 0.02, and fluency the lower of that and
    # the diversity factor, 1. Nothing shared with the source or between the parts: originality 1.
    assert own["function_words"] == own["prose"] == score.components["prose"] == 0.0
    assert score.components["grammar"] == score.components["fluency"] == pytest.approx(0.02)
    assert score.components["echoed"] == 0.0 and score.components["originality"] == 1.0
    # Off topic: topicality is the floor, 0.1.
    assert score.total == pytest.approx(quality * 0.1 * 0.02)


def test_repeated_word_diversity_by_hand() -> None:
    score = _score(TLDR_TASK, "starter " * 20, "starter " * 120)
    own = score.per_agent["summary"]
    # 20 tokens of one type: 1/20; 19 bigrams of one kind: 1/19.
    assert own["distinct_1"] == pytest.approx(1 / 20) and own["distinct_2"] == pytest.approx(1 / 19)
    assert own["diversity"] == pytest.approx((1 / 20 + 1 / 19) / 2)


def test_rouge_is_reported_when_there_is_a_reference() -> None:
    tldr = _score(TLDR_TASK, *TLDR["good"])
    assert {"rouge1", "rouge2", "rougeL", "rouge"} <= set(tldr.per_agent["summary"])
    assert "rouge" not in tldr.per_agent["expansion"]  # no reference for the expansion
    assert tldr.components["rouge"] == tldr.per_agent["summary"]["rouge"] > 0.3
    reference = TLDR_TASK.roles[0].reference
    assert reference is not None
    exact = _score(TLDR_TASK, reference, TLDR["good"][1])
    assert exact.per_agent["summary"]["rougeL"] == 1.0
    intro = _score(INTRODUCTION_TASK, *INTRODUCTION["good"])
    assert "rouge" not in intro.components  # no references: the weight is dropped, not scored 0
    assert set(intro.components) == TEAM_COMPONENTS
    assert all(set(values) == PART_COMPONENTS for values in intro.per_agent.values())


@pytest.mark.parametrize(
    "text",
    [
        "",
        " \n\t ",
        "\x00\x01\x02\x1b[31m\x7f" * 500,
        "\u200b\ufeff\u202e" * 2000,
        "word " * 13_000,
        "x" * 65_536,
        "the " * 5000,
        "🙂" * 10_000,
        "%s {} \\ <|endoftext|> " * 1000,
    ],
    ids=["empty", "blank", "control", "invisible", "many-words", "one-huge-token", "the", "emoji", "markup"],
)
def test_hostile_parts_score_low_and_never_crash(text: str) -> None:
    for task, texts in ((TLDR_TASK, TLDR), (INTRODUCTION_TASK, INTRODUCTION)):
        good = _score(task, *texts["good"]).total
        for parts in ((text, text), (texts["good"][0], text), (text, texts["good"][1])):
            score = _score(task, *parts)
            values = [score.total, *score.components.values()]
            values += [v for part in score.per_agent.values() for v in part.values()]
            assert all(math.isfinite(v) for v in values)
            # Both parts hostile: a small fraction of a good text (about 0.75). One good part cannot
            # carry the team's text.
            assert 0.0 <= score.total < (0.1 if parts == (text, text) else good / 2), parts


def test_weights_and_parameters_are_validated() -> None:
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)
    only_length = WritingReward(weights={"length": 1.0})
    score = only_length(TLDR_TASK, {"summary": TLDR["good"][0], "expansion": TLDR["good"][1]})
    assert score.components["quality"] == 1.0  # both parts inside their bands
    with pytest.raises(ValueError, match="unknown weights"):
        WritingReward(weights={"lenght": 1.0})
    with pytest.raises(ValueError, match="positive sum"):
        WritingReward(weights={"length": 0.0})
    with pytest.raises(ValueError, match="copy_weight"):
        WritingReward(copy_weight=2.0)
    with pytest.raises(ValueError, match="off_topic_floor"):
        WritingReward(off_topic_floor=-0.1)
    with pytest.raises(ValueError, match="function_threshold must be positive"):
        WritingReward(function_threshold=0.0)
    with pytest.raises(ValueError, match="variety_threshold must be positive"):
        WritingReward(variety_threshold=-1.0)
    with pytest.raises(ValueError, match="same_class_threshold must be positive"):
        WritingReward(same_class_threshold=float("nan"))
    with pytest.raises(ValueError, match="prose_floor must be in"):
        WritingReward(prose_floor=1.5)


def test_as_score_accepts_a_pair_and_rejects_garbage() -> None:
    assert as_score((1, {"a": 2})) == Score(1.0, {"a": 2.0}, {})
    score = Score(0.5, {"x": 1.0}, {"summary": {"y": 2}})
    assert as_score(score) == Score(0.5, {"x": 1.0}, {"summary": {"y": 2.0}})
    with pytest.raises(TypeError, match="Score or a"):
        as_score(0.5)
    with pytest.raises(ValueError, match="total must be a finite number"):
        as_score((float("nan"), {}))
    with pytest.raises(ValueError, match="component 'a'"):
        as_score((0.5, {"a": "high"}))
