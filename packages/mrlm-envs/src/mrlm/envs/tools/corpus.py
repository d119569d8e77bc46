"""A document collection with the questions and facts that lookup tasks are made from.

A collection is given as records (mappings) or a JSONL file of them, one per line::

    {"id": "varrow-lighthouse", "title": "Varrow Lighthouse", "text": "...",
     "questions": [{"question": "Which engineer built ...?", "answer": "Matilda Crane",
                    "aliases": ["M. Crane"], "distractors": ["Hester Quillon"]}],
     "facts": [{"phrase": "the year the Varrow Lighthouse was completed", "value": 1847}]}

``questions`` and ``facts`` are optional: documents without them are searchable but never asked
about. An answer made only of digits is compared as an integer, any other as normalised text.
``aliases`` (other accepted texts) and ``distractors`` (plausible wrong answers) are optional. A text
answer that names a distractor, or the answer of another question in the collection, besides the
expected words is wrong; so is one with words around the expected ones that are neither filler nor
the question's ("goat cow sheep" for "sheep"). A question that itself names the candidates
("... from goat's, cow's or sheep's milk?") should list them under ``distractors`` (see
:mod:`mrlm.envs.tools.answers`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mrlm.envs.tools.documents import BUILTIN_DOCUMENTS
from mrlm.envs.tools.search import Document

DocumentSource = Sequence[Mapping[str, Any]] | str | os.PathLike[str] | None


@dataclass(frozen=True)
class Question:
    """A question answered by a document: ``answer`` (and any alias) is the accepted answer, and
    an answer that also names one of ``distractors`` is refused."""

    document_id: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fact:
    """A number stated in a document; ``phrase`` names it ("the height of Mount Orrin in metres")."""

    document_id: str
    phrase: str
    value: int


@dataclass(frozen=True)
class Corpus:
    """Documents to search, and what can be asked about them."""

    documents: tuple[Document, ...]
    questions: tuple[Question, ...]
    facts: tuple[Fact, ...]


def load_corpus(source: DocumentSource = None) -> Corpus:
    """The built-in collection (``None``), records, or a JSONL file path.

    Raises:
        ValueError: a record lacks ``id``/``title``/``text``, ids repeat, or a line is not JSON.
    """
    if source is None:
        records: Iterable[Mapping[str, Any]] = BUILTIN_DOCUMENTS
    elif isinstance(source, (str, os.PathLike)):
        records = _read_jsonl(os.fspath(source))
    else:
        records = source
    documents: list[Document] = []
    questions: list[Question] = []
    facts: list[Fact] = []
    for number, record in enumerate(records, 1):
        if not isinstance(record, Mapping) or not all(
            isinstance(record.get(k), str) for k in ("id", "title", "text")
        ):
            raise ValueError(f"document {number} needs string fields 'id', 'title' and 'text'")
        document = Document(record["id"], record["title"], record["text"])
        documents.append(document)
        for item in record.get("questions", ()):
            aliases = tuple(str(alias) for alias in item.get("aliases", ()))
            distractors = tuple(str(text) for text in item.get("distractors", ()))
            questions.append(
                Question(document.id, str(item["question"]), str(item["answer"]), aliases, distractors)
            )
        for item in record.get("facts", ()):
            if not isinstance(item.get("value"), int) or isinstance(item.get("value"), bool):
                raise ValueError(f"document {document.id!r}: a fact's value must be an integer")
            facts.append(Fact(document.id, str(item["phrase"]), item["value"]))
    ids = [document.id for document in documents]
    if len(set(ids)) != len(ids):
        raise ValueError("document ids must be unique")
    return Corpus(tuple(documents), tuple(questions), tuple(facts))


def _read_jsonl(path: str) -> list[dict[str, Any]]:
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError as error:
                    raise ValueError(f"{path}:{number}: not valid JSON ({error})") from None
    return records
