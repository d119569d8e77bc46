"""Cleaning model output, words and content words, marker phrases, and the motion lists."""

from __future__ import annotations

import pytest

from mrlm.envs.debate.motions import MAX_MOTION_CHARS, MOTIONS, check_motions
from mrlm.envs.debate.text import CLIP_MARK, clean_turn, content_words, distinct_matches, phrase_pattern, stem
from mrlm.envs.debate.transcript import schedule, seats


def test_clean_turn_drops_control_characters_and_clips() -> None:
    assert clean_turn("  a\x00b\x1b[1mc\x07\r\nd\re\x9f\ud800  ", 100) == ("ab[1mc\nd\ne", False)
    assert clean_turn("one\n\n\n\n\ntwo\ttabs stay", 100) == ("one\n\ntwo\ttabs stay", False)
    assert clean_turn("abcdef ghij", 7) == ("abcdef" + CLIP_MARK, True)  # the cut's trailing space goes
    assert clean_turn("", 5) == ("", False)


def test_stems_and_content_words() -> None:
    assert [
        stem(w) for w in ["cities", "taxes", "churches", "cars", "banned", "banning", "glass", "bus"]
    ] == [
        "city",
        "tax",
        "church",
        "car",
        "bann",
        "bann",
        "glass",
        "bus",
    ]
    assert content_words("This house believes that the CITIES, therefore, should ban 40 cars!") == {
        "city",
        "ban",
        "car",
    }


def test_phrases_match_whole_words_only() -> None:
    pattern = phrase_pattern("but|for example|e.g.|as a result")
    text = "Butter, e.g. bread; but for   example\nas a result. rebut"
    assert distinct_matches(pattern, text) == {"e.g.", "but", "for example", "as a result"}
    assert distinct_matches(pattern, "butter rebuttal e.gx") == frozenset()


def test_built_in_motions_are_many_distinct_and_debatable() -> None:
    assert len(MOTIONS) >= 30 and len(set(MOTIONS)) == len(MOTIONS)
    for motion in MOTIONS:
        assert len(content_words(motion)) >= 2, motion
        assert len(motion) <= MAX_MOTION_CHARS and clean_turn(motion, MAX_MOTION_CHARS) == (motion, False)
    assert check_motions(None) is MOTIONS


def test_user_motions_are_checked() -> None:
    assert check_motions(["  Tea beats coffee.\x00 ", "Rivers deserve rights."]) == (
        "Tea beats coffee.",
        "Rivers deserve rights.",
    )
    with pytest.raises(ValueError, match="at most 500 characters"):
        check_motions(["word " * 200])
    with pytest.raises(ValueError, match="must be a str"):
        check_motions([42])  # type: ignore[list-item]


def test_schedule_and_seats() -> None:
    assert schedule(2) == ("opening", "closing")
    assert schedule(5) == ("opening", "rebuttal", "rebuttal", "rebuttal", "closing")
    assert seats(1) == (("pro", "pro"), ("con", "con"))
    assert [agent for agent, _ in seats(3)] == ["pro_0", "con_0", "pro_1", "con_1", "pro_2", "con_2"]
    with pytest.raises(ValueError, match="debaters_per_side"):
        seats(True)  # a bool is not a count
