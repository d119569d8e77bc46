"""The built-in data sets ship as JSONL package data and load through the readers of users' records.

Each data set is pinned by a digest of its content, computed from the Python literals the data was
written as before it moved to JSONL, so the move (and any later edit) changes nothing unseen. A
user's file in the same format gives the same tasks: the built-ins are written back as records, passed
as ``records=`` (or ``documents=``, ``topics=``), and each env resets to the same observations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from mrlm.envs import make
from mrlm.envs._package_data import data_file
from mrlm.envs.class_completion import builtin_classes, builtin_records, load_class_tasks
from mrlm.envs.class_completion.tasks import ClassTask
from mrlm.envs.code import builtin_tasks, load_tasks
from mrlm.envs.code.problems import PROBLEMS
from mrlm.envs.code.tasks import CodeTask
from mrlm.envs.coop_code import builtin_problems, load_coop_tasks
from mrlm.envs.coop_code.tasks import CoopTask
from mrlm.envs.core.records import read_jsonl
from mrlm.envs.debate.motions import MOTIONS, check_motions
from mrlm.envs.tools.corpus import load_corpus
from mrlm.envs.tools.documents import BUILTIN_DOCUMENTS
from mrlm.envs.writing.abstracts import ABSTRACTS
from mrlm.envs.writing.posts import POSTS
from mrlm.envs.writing.records import load_records

#: (package, file, records in it).
FILES = (
    ("mrlm.envs.code", "problems.jsonl", 27),
    ("mrlm.envs.coop_code", "problems.jsonl", 12),
    ("mrlm.envs.class_completion", "classes.jsonl", 5),
    ("mrlm.envs.writing", "posts.jsonl", 12),
    ("mrlm.envs.writing", "abstracts.jsonl", 8),
    ("mrlm.envs.tools", "documents.jsonl", 39),
    ("mrlm.envs.debate", "motions.jsonl", 32),
)


def code_content(task: CodeTask) -> list[Any]:
    steps = [[step.code, step.counted] for step in task.steps]
    return [
        task.task_id,
        task.entry_point,
        task.description,
        task.prompt_code,
        task.test_setup,
        steps,
        task.canonical_solution,
        task.source,
    ]


def coop_content(task: CoopTask) -> list[Any]:
    parts = [[part.name, part.stub, part.description, list(part.uses)] for part in task.parts]
    return [
        task.task_id,
        task.description,
        parts,
        code_content(task.tests),
        task.context,
        None if task.solution is None else list(task.solution),
        task.source,
    ]


def class_content(task: ClassTask) -> list[Any]:
    methods = [
        [method.name, method.stub, list(method.depends_on), method.solution] for method in task.methods
    ]
    layout = [[list(stub) for stub in task.layout.stubs], task.layout.class_end, task.layout.indent]
    return [
        task.task_id,
        task.class_name,
        task.description,
        task.skeleton,
        methods,
        layout,
        code_content(task.tests),
        list(task.test_sources),
        task.source,
    ]


def digest(items: Sequence[Any], content: Callable[[Any], Any] = lambda item: item) -> str:
    """sha256 of the items' content as canonical JSON."""
    text = json.dumps([content(item) for item in items], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


# Computed from the Python literals before they moved to JSONL.
PINNED = {
    "code": "d7e9bf9950a3ff11465a362f5fe86ce7a3f4ff03de0e63940636d95d043fb9f5",
    "coop": "e77b00dbaa02c1a92daeb132fb2522a80ff4e65c72baeccf2e7f980606cd3fb8",
    "classes": "dfbecd8c3e79f6a7d2af5048200ce0fe6a87d75f5b7513ca99ec77f674b5bfff",
    "class_records": "429f202eb7dd27d3f16d2c5f3697df4c025b54bee468736907752194fc18c53d",
    "posts": "e4f7198354425ab6cc61db4003a54afb8ee00aed9c67ae1aeba4ef3b47da897e",
    "abstracts": "753dfe75cb55bda9d2d1e22f27cffd04ed2fc07efa2da70eed46e0f2bf8ae499",
    "documents": "3cd3638bc9de9c69b73912531aa1dbc25485509789775b1655d7b9461ecda259",
    "motions": "c1ad110b1f2d9ea5c013724973afc98d10fab68440bde4afdf6d7c10fdd96fa5",
}


def test_the_data_files_are_in_the_package() -> None:
    for package, name, count in FILES:
        resource = files(package) / "data" / name
        assert resource.is_file(), (package, name)
        lines = resource.read_text(encoding="utf-8").splitlines()
        assert len(lines) == count and all(json.loads(line) for line in lines), (package, name)


def test_code_problems() -> None:
    tasks = builtin_tasks()
    assert digest(tasks, code_content) == PINNED["code"]
    assert len(tasks) == 27 and sum(len(task.tests) for task in tasks) == 177
    assert {task.source for task in tasks} == {"builtin"}
    assert (tasks[0].task_id, tasks[0].entry_point) == ("mrlm-code/0", "run_length_encode")
    assert tasks[0].tests[0] == 'assert run_length_encode("aaabcc") == "a3bc2"'
    assert tasks[-1].entry_point == "eval_rpn" and tasks[-1].tests[-1].count("must raise ValueError") == 2
    assert [problem.prompt + problem.solution for problem in PROBLEMS] == [
        task.canonical_solution for task in tasks
    ]
    with data_file("mrlm.envs.code", "problems.jsonl") as path:
        assert load_tasks(path) == tuple(replace(task, source="mrlm") for task in tasks)


def test_coop_problems() -> None:
    tasks = builtin_problems()
    assert digest(tasks, coop_content) == PINNED["coop"]
    assert [len(task.parts) for task in tasks] == [2] * 9 + [3] * 3
    assert [part.name for part in tasks[0].parts] == ["is_prime", "sum_of_primes"]
    assert tasks[0].tests.tests[0] == "assert sum_of_primes(10) == 17"
    assert [task.task_id for task in tasks if task.context] == ["mrlm-coop/9"]
    with data_file("mrlm.envs.coop_code", "problems.jsonl") as path:
        assert load_coop_tasks(path) == tuple(_relabel(task, "mrlm") for task in tasks)


def test_classes() -> None:
    tasks = builtin_classes()
    assert digest(tasks, class_content) == PINNED["classes"]
    assert digest(builtin_records()) == PINNED["class_records"]
    assert [task.class_name for task in tasks] == [
        "Inventory",
        "TextStats",
        "BankAccount",
        "GridBoard",
        "Playlist",
    ]
    assert [len(task.tests.tests) for task in tasks] == [10, 9, 10, 9, 9]
    assert builtin_records() is not builtin_records()  # fresh dicts: a caller may change them
    with data_file("mrlm.envs.class_completion", "classes.jsonl") as path:
        assert load_class_tasks(path) == tuple(_relabel(task, "classeval") for task in tasks)


def test_posts_and_abstracts() -> None:
    assert digest(POSTS) == PINNED["posts"] and digest(ABSTRACTS) == PINNED["abstracts"]
    assert (len(POSTS), len(ABSTRACTS)) == (12, 8)
    assert POSTS[0]["prompt"].startswith("SUBREDDIT: r/Breadbaking\n\nTITLE: My sourdough starter")
    assert ABSTRACTS[0]["title"] == "Windowed Recurrence for Long Document Classification"
    with data_file("mrlm.envs.writing", "posts.jsonl") as path:
        assert load_records(path, "tldr", origin="builtin") == load_records(POSTS, "tldr", origin="builtin")
    with data_file("mrlm.envs.writing", "abstracts.jsonl") as path:
        expected = load_records(ABSTRACTS, "introduction", origin="builtin")
        assert load_records(path, "introduction", origin="builtin") == expected


def test_documents() -> None:
    assert digest(BUILTIN_DOCUMENTS) == PINNED["documents"]
    corpus = load_corpus()
    assert (len(corpus.documents), len(corpus.questions), len(corpus.facts)) == (39, 54, 33)
    assert (
        corpus.facts[0].phrase == "the year the Varrow Lighthouse was completed"
        and corpus.facts[0].value == 1847
    )
    with data_file("mrlm.envs.tools", "documents.jsonl") as path:
        assert load_corpus(path) == corpus


def test_motions() -> None:
    assert digest(MOTIONS) == PINNED["motions"] and len(MOTIONS) == 32
    assert MOTIONS[0] == "Cities should ban private cars from their centres."
    with data_file("mrlm.envs.debate", "motions.jsonl") as path:
        assert check_motions(read_jsonl(path)) == MOTIONS


# A user's records in the built-ins' formats: written back from the loaded objects, not copied.


def code_record(task: CodeTask) -> dict[str, Any]:
    assert task.canonical_solution is not None
    solution = task.canonical_solution.removeprefix(task.prompt_code)
    return {
        "task_id": task.task_id,
        "entry_point": task.entry_point,
        "prompt": task.prompt_code,
        "canonical_solution": solution,
        "tests": list(task.tests),
    }


def coop_record(task: CoopTask) -> dict[str, Any]:
    assert task.solution is not None
    parts = [
        {
            "name": part.name,
            "stub": part.stub,
            "uses": list(part.uses),
            "canonical_solution": code[len(part.stub) :],
        }
        for part, code in zip(task.parts, task.solution, strict=True)
    ]
    return {
        "task_id": task.task_id,
        "description": task.description,
        "context": task.context,
        "parts": parts,
        "tests": list(task.tests.tests),
    }


def write_jsonl(path: Path, records: Sequence[Any]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("env_id", "argument", "records", "kwargs"),
    [
        ("mrlm/Code-v0", "records", lambda: [code_record(task) for task in builtin_tasks()], {}),
        (
            "mrlm/CoopCode-v0",
            "records",
            lambda: [coop_record(task) for task in builtin_problems() if len(task.parts) == 2],
            {"num_agents": 2, "kind": "parallel"},
        ),
        ("mrlm/ClassCompletion-v0", "records", builtin_records, {"kind": "parallel"}),
        ("mrlm/Writing-v0", "records", lambda: list(POSTS), {"task": "tldr", "kind": "parallel"}),
        ("mrlm/Writing-v0", "records", lambda: list(ABSTRACTS), {"task": "introduction", "kind": "parallel"}),
        ("mrlm/ToolUse-v0", "documents", lambda: list(BUILTIN_DOCUMENTS), {}),
    ],
    ids=["code", "coop", "classes", "posts", "abstracts", "documents"],
)
def test_a_users_file_in_the_same_format_gives_the_same_tasks(
    tmp_path: Path, env_id: str, argument: str, records: Callable[[], list[Any]], kwargs: dict[str, Any]
) -> None:
    given: dict[str, Any] = {**kwargs, argument: write_jsonl(tmp_path / "records.jsonl", records())}
    builtin, from_file = make(env_id, **kwargs), make(env_id, **given)
    try:
        for seed in range(30):
            observation, info = builtin.reset(seed=seed)  # gymnasium or PettingZoo parallel
            assert observation and info
            assert _provenance_free(from_file.reset(seed=seed)) == _provenance_free((observation, info)), seed
    finally:
        builtin.close()
        from_file.close()


def test_motions_from_a_users_file_give_the_same_debates(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "motions.jsonl", MOTIONS)
    topics = read_jsonl(Path(path))
    builtin, from_file = (
        make("mrlm/Debate-v0", kind="parallel"),
        make("mrlm/Debate-v0", kind="parallel", topics=topics),
    )
    for seed in range(10):
        observations, infos = builtin.reset(seed=seed)
        assert observations["pro"]["text"].startswith("Motion: ")
        assert from_file.reset(seed=seed) == (observations, infos)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tests": []}, "record 0: field 'tests' must be a non-empty list"),
        ({"tests": ["assert ("]}, "record 0: test 0 does not compile"),
        ({"entry_point": "other"}, "record 0: the prompt does not define other"),
    ],
)
def test_code_records_in_the_builtin_format_are_checked(change: dict[str, Any], message: str) -> None:
    record = {**code_record(builtin_tasks()[0]), **change}
    with pytest.raises(ValueError, match=message):
        load_tasks([record])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"parts": []}, "record 0: 'parts' must be a list of at least two"),
        ({"tests": "assert True"}, "record 0: field 'tests' must be a non-empty list"),
        ({"part": {"name": "2x"}}, "record 0, part 0: 'name' must be a Python name"),
        (
            {"part": {"stub": "def other():\n    pass\n"}},
            "record 0, part 0: the stub does not define is_prime",
        ),
        ({"part": {"uses": ["nowhere"]}}, "part 'is_prime' uses unknown parts"),
    ],
)
def test_coop_parts_records_are_checked(change: dict[str, Any], message: str) -> None:
    record = coop_record(builtin_problems()[0])
    record["parts"][0].update(change.get("part", {}))
    record.update({field: value for field, value in change.items() if field != "part"})
    with pytest.raises(ValueError, match=message):
        load_coop_tasks([record])


def _relabel(task: Any, source: str) -> Any:
    return replace(task, source=source, tests=replace(task.tests, source=source))


def _provenance_free(value: Any) -> Any:
    """``value`` without the ``source``/``origin`` entries that tell built-in tasks from records."""
    if isinstance(value, dict):
        return {key: _provenance_free(item) for key, item in value.items() if key not in ("source", "origin")}
    if isinstance(value, (list, tuple)):
        return [_provenance_free(item) for item in value]
    return value
