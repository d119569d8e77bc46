"""The ``search`` tool: ranked retrieval behind a pluggable backend, by default BM25 over local text.

:class:`BM25Index` works offline over any document collection. Text is case-folded and split into
runs of letters and digits; a short English stop-word list is dropped and a plural ``s`` stripped
(``lanterns`` finds ``lantern``). A document's text is its title followed by its body. Each distinct
query term contributes (Okapi BM25, with the non-negative idf used by Lucene)::

    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over t in q of idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from mrlm.envs.tools.registry import Tool, ToolError

MAX_QUERY_CHARS = 300
MAX_RESULTS = 10
#: Characters of each document's text shown in a result.
SNIPPET_CHARS = 600

_WORD = re.compile(r"[^\W_]+")
_STOPWORD_TEXT = (
    "a an and are as at be by did do does for from has have how in is it its of on or that the their "
    "this to was were what when where which who whom whose why with"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Document:
    """A searchable document; ``score`` is the relevance a search gave it (0 when not searched)."""

    id: str
    title: str
    text: str
    score: float = 0.0


@runtime_checkable
class SearchBackend(Protocol):
    """Anything that ranks documents for a query: BM25 here, or a web or vector search elsewhere."""

    def search(self, query: str, k: int) -> list[Document]:
        """At most ``k`` documents, most relevant first, each with its score."""
        ...


def tokenize(text: str) -> list[str]:
    """Lower-cased words without stop words, a final plural ``s`` removed."""
    tokens = []
    for word in _WORD.findall(text.casefold()):
        if word in STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        tokens.append(word)
    return tokens


class BM25Index:
    """Okapi BM25 over a fixed collection.

    Args:
        documents: the collection; ``Document`` objects or mappings with ``id``, ``title``, ``text``.
        k1: term-frequency saturation.
        b: document-length normalisation (0: none, 1: full).
    """

    def __init__(
        self, documents: Iterable[Document | Mapping[str, Any]], *, k1: float = 1.5, b: float = 0.75
    ):
        self.k1, self.b = float(k1), float(b)
        self.documents = [_as_document(document) for document in documents]
        ids = [document.id for document in self.documents]
        if len(set(ids)) != len(ids):
            raise ValueError("document ids must be unique")
        self._frequencies = [Counter(tokenize(f"{d.title} {d.text}")) for d in self.documents]
        self._lengths = [sum(counts.values()) for counts in self._frequencies]
        self._average_length = sum(self._lengths) / len(self._lengths) if self._lengths else 0.0
        self._postings: dict[str, list[int]] = {}
        for index, counts in enumerate(self._frequencies):
            for term in counts:
                self._postings.setdefault(term, []).append(index)

    def idf(self, term: str) -> float:
        frequency = len(self._postings.get(term, ()))
        return math.log(1.0 + (len(self.documents) - frequency + 0.5) / (frequency + 0.5))

    def score(self, query: str, index: int) -> float:
        """The BM25 score of document ``index`` for ``query``."""
        counts, length = self._frequencies[index], self._lengths[index]
        total = 0.0
        for term in dict.fromkeys(tokenize(query)):
            tf = counts.get(term, 0)
            if tf:
                norm = 1.0 - self.b + self.b * length / self._average_length
                total += self.idf(term) * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
        return total

    def search(self, query: str, k: int) -> list[Document]:
        """The ``k`` best-scoring documents with a positive score; ties keep collection order."""
        candidates = sorted({i for term in tokenize(query) for i in self._postings.get(term, ())})
        scored = [(self.score(query, i), i) for i in candidates]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [replace(self.documents[i], score=s) for s, i in scored[: max(k, 0)] if s > 0]


def _as_document(document: Document | Mapping[str, Any]) -> Document:
    if isinstance(document, Document):
        return document
    try:
        return Document(str(document["id"]), str(document["title"]), str(document["text"]))
    except KeyError as error:
        raise ValueError(f"a document needs 'id', 'title' and 'text'; missing {error}") from None


class SearchTool:
    """The callable behind the ``search`` tool: runs the backend, formats the ranked results."""

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend

    def __call__(self, arguments: dict[str, Any]) -> str:
        query = arguments["query"]
        if not tokenize(query):
            raise ToolError("the query has no searchable words")
        results = self.backend.search(query, arguments["k"])
        if not results:
            return "no documents match the query"
        return "\n\n".join(_format(rank, document) for rank, document in enumerate(results, 1))


def _format(rank: int, document: Document) -> str:
    text = document.text if len(document.text) <= SNIPPET_CHARS else document.text[:SNIPPET_CHARS] + " ..."
    return f"{rank}. [{document.id}] {document.title} (score {document.score:.2f})\n{text}"


def search_tool(backend: SearchBackend) -> Tool:
    """The ``search`` tool: ``{"query": str, "k": int = 3}`` -> the ranked documents as text.

    Each result reads ``"<rank>. [<id>] <title> (score <s>)"`` then the document text, results
    separated by a blank line.
    """
    return Tool(
        name="search",
        description=(
            "Search the document collection (an encyclopedia of places, people, inventions, species and "
            "customs) and return the best-matching documents, most relevant first."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "keywords or a question",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                },
                "k": {
                    "type": "integer",
                    "description": "how many documents to return",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "default": 3,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        function=SearchTool(backend),
    )
