"""Built-in introduction tasks: abstracts of imaginary papers, in the introduction record format.

The abstracts were written for this package and describe no real paper. Each record is a
``{"title", "abstract"}`` dict; none carries reference paragraphs, so these tasks have no ROUGE
component. They ship as ``data/abstracts.jsonl`` in this package, read as a user's ``records`` file
is: the file is an example of the format.
"""

from __future__ import annotations

from mrlm.envs._package_data import data_file
from mrlm.envs.core.records import record_rows

#: Eight abstracts.
ABSTRACTS: tuple[dict[str, str], ...]
with data_file("mrlm.envs.writing", "abstracts.jsonl") as _path:
    ABSTRACTS = tuple(record_rows(_path))
