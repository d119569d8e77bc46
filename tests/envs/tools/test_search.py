"""BM25 matches a hand computation, finds the right document for every generated question, plugs in."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mrlm.envs.tools.corpus import load_corpus
from mrlm.envs.tools.registry import ToolRegistry
from mrlm.envs.tools.search import BM25Index, Document, SearchBackend, search_tool, tokenize

TOY = [
    {"id": "d1", "title": "Apple", "text": "apple banana"},
    {"id": "d2", "title": "Banana", "text": "banana cherry cherry"},
    {"id": "d3", "title": "Cherry", "text": "date"},
]


def test_tokenize() -> None:
    assert tokenize("The Lanterns of Tesk, and its CANAL!") == ["lantern", "tesk", "canal"]
    assert tokenize("glass bus iris naïve 42") == ["glass", "bus", "iris", "naïve", "42"]


def test_bm25_matches_a_hand_computed_score() -> None:
    index = BM25Index(TOY, k1=1.5, b=0.75)
    # N = 3 documents of 3, 4 and 2 tokens (title + text), average 3; banana and cherry each occur in 2.
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    d1 = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 3 / 3))
    d2 = 2 * idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 4 / 3))
    d3 = idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 3))
    results = index.search("banana cherry", 10)
    assert [doc.id for doc in results] == ["d2", "d3", "d1"]
    assert [doc.score for doc in results] == pytest.approx([d2, d3, d1], rel=1e-12)
    assert index.score("banana banana cherry", 1) == pytest.approx(d2)  # a repeated term counts once
    assert index.search("banana cherry", 1)[0].id == "d2"
    assert index.search("kiwi", 5) == [] and index.search("the of", 5) == []


def test_bm25_ties_keep_collection_order_and_validates_documents() -> None:
    index = BM25Index([Document("a", "x", "same words"), Document("b", "x", "same words")])
    assert [doc.id for doc in index.search("same", 2)] == ["a", "b"]
    with pytest.raises(ValueError, match="unique"):
        BM25Index([TOY[0], TOY[0]])
    with pytest.raises(ValueError, match="'id', 'title' and 'text'"):
        BM25Index([{"id": "x", "text": "y"}])


def test_the_right_document_ranks_first_for_every_question_and_fact() -> None:
    corpus = load_corpus()
    assert 30 <= len(corpus.documents) <= 60 and len(corpus.questions) >= 40 and len(corpus.facts) >= 20
    index = BM25Index(corpus.documents)
    texts = {doc.id: doc.text for doc in corpus.documents}
    for question in corpus.questions:
        assert index.search(question.question, 3)[0].id == question.document_id, question
        assert question.answer.casefold() in texts[question.document_id].casefold(), question
    for fact in corpus.facts:
        assert index.search(fact.phrase, 3)[0].id == fact.document_id, fact
        assert str(fact.value) in texts[fact.document_id], fact


def test_documents_from_records_and_jsonl(tmp_path: Path) -> None:
    records = [
        {**TOY[0], "questions": [{"question": "What fruit?", "answer": "apple", "aliases": ["an apple"]}]},
        {**TOY[1], "facts": [{"phrase": "the cherry count", "value": 2}]},
    ]
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf-8")
    for source in (records, path, str(path)):
        corpus = load_corpus(source)
        assert [d.id for d in corpus.documents] == ["d1", "d2"]
        assert corpus.questions[0].aliases == ("an apple",) and corpus.facts[0].value == 2
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=":1: not valid JSON"):
        load_corpus(path)
    with pytest.raises(ValueError, match="'id', 'title' and 'text'"):
        load_corpus([{"id": "x"}])
    with pytest.raises(ValueError, match="integer"):
        load_corpus([{**TOY[0], "facts": [{"phrase": "p", "value": "2"}]}])
    with pytest.raises(ValueError, match="unique"):
        load_corpus([TOY[0], TOY[0]])


class FixedBackend:
    """A backend that always returns the same document (a stand-in for a web search)."""

    def search(self, query: str, k: int) -> list[Document]:
        return [Document("web-1", "Result", f"you searched for {query}", 1.0)][:k]


def test_the_search_tool_formats_results_and_takes_any_backend() -> None:
    assert isinstance(FixedBackend(), SearchBackend) and isinstance(BM25Index(TOY), SearchBackend)
    registry = ToolRegistry([search_tool(BM25Index(TOY))])
    result = registry.call("search", {"query": "cherry", "k": 1})
    assert (
        result.ok
        and result.content.startswith("1. [d2] Banana (score ")
        and "\nbanana cherry cherry" in result.content
    )
    assert registry.call("search", {"query": "cherry"}).content.count("\n\n") == 1  # two results, default k=3
    assert registry.call("search", {"query": "kiwi"}).content == "no documents match the query"
    assert registry.call("search", {"query": "the of ?"}).content == "the query has no searchable words"
    assert registry.call("search", {"query": "x", "k": 11}).malformed
    assert registry.call("search", {"query": ""}).malformed
    assert registry.call("search", {"query": "q" * 301}).malformed
    custom = ToolRegistry([search_tool(FixedBackend())]).call("search", {"query": "mrlm"})
    assert custom.content == "1. [web-1] Result (score 1.00)\nyou searched for mrlm"
