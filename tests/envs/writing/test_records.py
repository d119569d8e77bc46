"""Tasks from TL;DR and abstract records, and the built-in collections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mrlm.envs.writing.abstracts import ABSTRACTS
from mrlm.envs.writing.posts import POSTS
from mrlm.envs.writing.records import load_records, parse_tldr_prompt
from mrlm.envs.writing.tasks import DEFAULT_BANDS
from mrlm.envs.writing.text import count_words

TLDR_ROW = {
    "prompt": "SUBREDDIT: r/gardening\n\nTITLE: Basil keeps wilting\n\nPOST: My basil wilts every "
    "afternoon even though I water it.\n\nIt sits on a south window.\n\nTL;DR:",
    "completion": " Potted basil on a sunny window wilts daily despite watering.",
}


def test_tldr_prompt_fields() -> None:
    fields = parse_tldr_prompt(TLDR_ROW["prompt"])
    assert fields == {
        "subreddit": "r/gardening",
        "title": "Basil keeps wilting",
        "post": "My basil wilts every afternoon even though I water it.\n\nIt sits on a south window.",
    }


def test_a_prompt_without_markers_is_the_post() -> None:
    assert parse_tldr_prompt("Just some text.\nTL;DR:") == {
        "subreddit": "",
        "title": "",
        "post": "Just some text.",
    }


def test_tldr_records_from_a_list_and_from_jsonl(tmp_path: Path) -> None:
    no_reference = {"prompt": "POST: A second post.\n\nTL;DR:", "completion": ""}
    path = tmp_path / "tldr.jsonl"
    path.write_text(json.dumps(TLDR_ROW) + "\n\n" + json.dumps(no_reference) + "\n", encoding="utf-8")
    for source in ([TLDR_ROW, no_reference], path, str(path)):
        first, second = load_records(source, "tldr")
        assert first.kind == "tldr" and first.origin == "records" and first.index == 0
        assert first.title == "Basil keeps wilting" and first.context == {"subreddit": "r/gardening"}
        assert first.source.startswith("My basil wilts")
        summary, expansion = first.roles
        assert (summary.agent, expansion.agent) == ("summary", "expansion")
        assert summary.reference == "Potted basil on a sunny window wilts daily despite watering."
        assert expansion.reference is None
        assert summary.band == DEFAULT_BANDS["summary"]
        assert second.roles[0].reference is None and second.index == 1


def test_introduction_records_may_carry_reference_paragraphs() -> None:
    (task,) = load_records(
        [{"title": " T ", "abstract": "We study X.", "background": "X matters.", "contribution": ""}],
        "introduction",
    )
    assert task.title == "T" and task.source == "We study X."
    assert [role.agent for role in task.roles] == ["background", "contribution"]
    assert task.roles[0].reference == "X matters." and task.roles[1].reference is None


@pytest.mark.parametrize(
    ("rows", "kind", "message"),
    [
        ([TLDR_ROW, {"completion": "x"}], "tldr", "record 1 .* no 'prompt' field"),
        ([{"prompt": "  ", "completion": "x"}], "tldr", "record 0 .*non-empty string"),
        ([{"prompt": "SUBREDDIT: r/a\nPOST:\nTL;DR:"}], "tldr", "no post text"),
        ([{"prompt": "POST: x", "completion": 3}], "tldr", "'completion' must be a string"),
        ([{"title": "no abstract"}], "introduction", "record 0 .* no 'abstract' field"),
        ([{"abstract": "A.", "background": 5}], "introduction", "'background' must be a string"),
        (["just a string"], "tldr", "not a dict"),
        ([], "tldr", "empty"),
    ],
)
def test_bad_records_are_named(rows: list[object], kind: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_records(rows, kind)  # type: ignore[arg-type]


def test_bad_sources(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "POST: x"}\n{not json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        load_records(path, "tldr")
    with pytest.raises(TypeError, match="not one mapping"):
        load_records(TLDR_ROW, "tldr")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="collection of dicts"):
        load_records(42, "tldr")  # type: ignore[arg-type]


def test_builtin_collections_are_usable() -> None:
    posts = load_records(POSTS, "tldr", origin="builtin")
    abstracts = load_records(ABSTRACTS, "introduction", origin="builtin")
    assert len(posts) == 12 and len(abstracts) == 8
    assert len({task.title for task in posts + abstracts}) == 20
    for task in posts:
        low, high = task.roles[0].band
        assert task.roles[0].reference is not None
        assert low <= count_words(task.roles[0].reference) <= high  # the references fit their own band
        assert 90 <= count_words(task.source) <= 200 and task.context
    for task in abstracts:
        assert 90 <= count_words(task.source) <= 200
        assert all(role.reference is None for role in task.roles)
