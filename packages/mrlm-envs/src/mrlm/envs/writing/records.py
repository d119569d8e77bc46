"""Writing tasks from dataset records.

* ``tldr``: the TL;DR format (``trl-lib/tldr``): ``prompt`` and ``completion``. The prompt reads
  ``SUBREDDIT: r/...`` / ``TITLE: ...`` / ``POST: ...`` and ends with ``TL;DR:``; the post is the
  source and the completion the reference summary. A prompt without these markers is taken whole
  as the post (a trailing ``TL;DR:`` is dropped). An empty completion means no reference.
* ``introduction``: ``abstract`` (required) and ``title`` (optional); ``background`` and
  ``contribution``, when present, are reference paragraphs for the two parts.

Records come as a sequence or iterable of dicts (a list, a Hugging Face ``datasets.Dataset``) or as
the path of a JSONL file. Nothing is downloaded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from mrlm.envs.core.records import record_rows
from mrlm.envs.writing.tasks import AGENTS, DEFAULT_RATIO_BANDS, TaskKind, WritingTask, make_role

Records = str | os.PathLike[str] | Iterable[Mapping[str, Any]]

_FIELD = re.compile(r"^(SUBREDDIT|TITLE|POST):[ \t]*", re.MULTILINE)
_TLDR_CUE = re.compile(r"\s*TL;DR:?\s*$", re.IGNORECASE)


def load_records(source: Records, kind: TaskKind, *, origin: str = "records") -> list[WritingTask]:
    """Every record of ``source`` as a task of ``kind``, in order (``task.index`` is the position).

    Raises:
        ValueError: a record lacking a required field (the message names its index), invalid JSON,
            or no records at all.
        TypeError: ``source`` is not a collection of records.
    """
    rows = record_rows(source)
    if not rows:
        raise ValueError("no records: the collection is empty")
    build = tldr_task if kind == "tldr" else introduction_task
    return [build(row, index, origin=origin) for index, row in enumerate(rows)]


def parse_tldr_prompt(prompt: str) -> dict[str, str]:
    """The ``subreddit``, ``title`` and ``post`` of a TL;DR prompt (missing ones are empty).

    >>> parse_tldr_prompt("SUBREDDIT: r/cats\\n\\nTITLE: Help\\n\\nPOST: My cat hides.\\n\\nTL;DR:")
    {'subreddit': 'r/cats', 'title': 'Help', 'post': 'My cat hides.'}
    """
    body = _TLDR_CUE.sub("", prompt)
    fields = {"subreddit": "", "title": "", "post": ""}
    marks = list(_FIELD.finditer(body))
    if not any(mark.group(1) == "POST" for mark in marks):
        fields["post"] = body.strip()
        return fields
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following is not None else len(body)
        fields[mark.group(1).lower()] = body[mark.end() : end].strip()
    return fields


def tldr_task(record: Mapping[str, Any], index: int, *, origin: str = "records") -> WritingTask:
    """The task of one TL;DR record; ValueError naming ``index`` when it is unusable."""
    prompt = _text(record, "prompt", index, "TL;DR")
    completion = record.get("completion", "")
    if not isinstance(completion, str):
        raise ValueError(f"record {index} (TL;DR): 'completion' must be a string, got {completion!r:.60}")
    fields = parse_tldr_prompt(prompt)
    if not fields["post"]:
        raise ValueError(f"record {index} (TL;DR): the prompt has no post text")
    summary, expansion = AGENTS["tldr"]
    return WritingTask(
        kind="tldr",
        title=fields["title"],
        source=fields["post"],
        roles=(make_role(summary, completion.strip() or None), make_role(expansion)),
        ratio_band=DEFAULT_RATIO_BANDS["tldr"],
        origin=origin,
        index=index,
        context={"subreddit": fields["subreddit"]} if fields["subreddit"] else None,
    )


def introduction_task(record: Mapping[str, Any], index: int, *, origin: str = "records") -> WritingTask:
    """The task of one abstract record; ValueError naming ``index`` when it is unusable."""
    abstract = _text(record, "abstract", index, "introduction")
    title = record.get("title", "")
    background, contribution = AGENTS["introduction"]
    references = {agent: record.get(agent) for agent in (background, contribution)}
    for agent, value in references.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"record {index} (introduction): {agent!r} must be a string, got {value!r:.60}")
    return WritingTask(
        kind="introduction",
        title=title.strip() if isinstance(title, str) else "",
        source=abstract.strip(),
        roles=(
            make_role(background, (references[background] or "").strip() or None),
            make_role(contribution, (references[contribution] or "").strip() or None),
        ),
        ratio_band=DEFAULT_RATIO_BANDS["introduction"],
        origin=origin,
        index=index,
    )


def _text(record: Mapping[str, Any], field: str, index: int, label: str) -> str:
    if not isinstance(record, Mapping):
        raise ValueError(f"record {index} ({label}) is a {type(record).__name__}, not a dict")
    if field not in record:
        raise ValueError(
            f"record {index} ({label}) has no {field!r} field; it has {sorted(map(str, record))}"
        )
    value = record[field]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"record {index} ({label}): {field!r} must be a non-empty string, got {value!r:.60}")
    return value
