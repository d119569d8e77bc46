"""The document collection that ships with the package: short encyclopedia entries on invented subjects.

The subjects are made up so that a model cannot know the answers without searching. Each entry may
carry ``questions`` (answered by a fact stated in its text) and ``facts`` (a number stated in its
text, with a phrase naming it) from which the task generator builds lookup tasks. The entries ship as
``data/documents.jsonl`` in this package, in the format :func:`mrlm.envs.tools.corpus.load_corpus`
reads from a user's file, and are checked by it as a user's are: the file is an example of the format.
"""

from __future__ import annotations

from typing import Any

from mrlm.envs._package_data import data_file
from mrlm.envs.core.records import read_jsonl

#: The built-in collection's records.
BUILTIN_DOCUMENTS: tuple[dict[str, Any], ...]
with data_file("mrlm.envs.tools", "documents.jsonl") as _path:
    BUILTIN_DOCUMENTS = tuple(read_jsonl(_path))
