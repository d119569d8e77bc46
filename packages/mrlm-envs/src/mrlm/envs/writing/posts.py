"""Built-in TL;DR tasks: short forum posts with reference summaries, in the TL;DR record format.

The posts and summaries were written for this package (no dataset text). Each record is a
``{"prompt", "completion"}`` dict exactly like a ``trl-lib/tldr`` row, so the built-in tasks go
through the same parser as user records. They ship as ``data/posts.jsonl`` in this package, read as
a user's ``records`` file is: the file is an example of the format.
"""

from __future__ import annotations

from mrlm.envs._package_data import data_file
from mrlm.envs.core.records import record_rows

#: Twelve posts, each with a reference TL;DR.
POSTS: tuple[dict[str, str], ...]
with data_file("mrlm.envs.writing", "posts.jsonl") as _path:
    POSTS = tuple(record_rows(_path))
