"""HumanEval and MBPP records: format detection, sources (list, JSONL, Dataset-like), errors, splitting.

The records here are small problems written for these tests, in each format's layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mrlm.envs.code import detect_format, load_tasks
from tests.envs.code.replies import fenced

HUMANEVAL: dict[str, Any] = {
    "task_id": "Toy/0",
    "prompt": (
        "from typing import List\n\n\ndef running_max(values: List[int]) -> List[int]:\n"
        '    """Return the running maximum of values.\n    >>> running_max([1, 3, 2])\n    [1, 3, 3]\n    """\n'
    ),
    "canonical_solution": (
        "    out = []\n    for value in values:\n        out.append(value if not out else max(out[-1], value))\n"
        "    return out\n"
    ),
    "test": (
        'METADATA = {"author": "mrlm"}\n\n\ndef check(candidate):\n'
        "    assert candidate([]) == []\n"
        "    assert candidate([1, 3, 2]) == [1, 3, 3]\n"
        '    assert True, "always true: not a test"\n'
        "    data = [5, 1, 7]\n"
        "    assert candidate(data) == [5, 5, 7]\n"
        "    for n in range(1, 4):\n"
        "        assert candidate(list(range(n))) == list(range(n))\n"
    ),
    "entry_point": "running_max",
}

#: The prompt defines a helper that the tests call.
HUMANEVAL_HELPER: dict[str, Any] = {
    "task_id": "Toy/1",
    "prompt": (
        "def scramble(text: str) -> str:\n    return text[1:] + text[:1]\n\n\n"
        'def unscramble(text: str) -> str:\n    """Undo scramble."""\n'
    ),
    "canonical_solution": "    return text[-1:] + text[:-1]\n",
    "test": (
        "def check(f):\n"
        "    for word in ['abc', 'x', '']:\n"
        "        assert f(scramble(word)) == word\n"
        "    assert f('bca') == 'abc'\n\n"
        "check(unscramble)\n"
    ),
    "entry_point": "unscramble",
}

#: ``check`` has a ``return``: it cannot be split and counts as one test.
HUMANEVAL_UNSPLIT: dict[str, Any] = {
    "task_id": "Toy/2",
    "prompt": 'def triple(x: int) -> int:\n    """Three times x."""\n',
    "canonical_solution": "    return 3 * x\n",
    "test": "def check(candidate):\n    assert candidate(1) == 3\n    if candidate(0) == 0:\n        return\n    assert False\n",
    "entry_point": "triple",
}

MBPP_FULL: dict[str, Any] = {
    "task_id": 901,
    "text": "Write a function to count the vowels in a string.",
    "code": "def count_vowels(s):\r\n    return sum(c in 'aeiouAEIOU' for c in s)",
    "test_list": [
        "assert count_vowels('hello') == 2",
        "assert count_vowels('') == 0",
        "assert count_vowels('AEIOU') == 5",
    ],
    "test_setup_code": "",
    "challenge_test_list": ["assert count_vowels('rhythm') == 0"],
}

MBPP_SANITIZED: dict[str, Any] = {
    "source_file": "toy.py",
    "task_id": 902,
    "prompt": "Write a function that returns the length of the hypotenuse of a right triangle.",
    "code": "import math\ndef hypotenuse(a, b):\n    return math.hypot(a, b)",
    "test_imports": ["import math"],
    "test_list": ["assert math.isclose(hypotenuse(3, 4), 5)", "assert math.isclose(hypotenuse(5, 12), 13)"],
}

#: The first call in the test is a builtin (set), not the entry point.
MBPP_BUILTIN_FIRST: dict[str, Any] = {
    "task_id": 903,
    "text": "Write a function to find the shared elements of two lists.",
    "code": "def shared(a, b):\n    return list(set(a) & set(b))",
    "test_list": ["assert set(shared([1, 2], [2, 3])) == {2}", "assert shared([], [1]) == []"],
}

RECORDS: list[dict[str, Any]] = [
    HUMANEVAL,
    HUMANEVAL_HELPER,
    HUMANEVAL_UNSPLIT,
    MBPP_FULL,
    MBPP_SANITIZED,
    MBPP_BUILTIN_FIRST,
]


class FakeDataset:
    """What the loader needs of a Hugging Face Dataset: len, indexing and iteration over row dicts."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return dict(self._rows[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (dict(row) for row in self._rows)


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records) + "\n", encoding="utf-8")
    return path


def test_formats_are_detected_per_record() -> None:
    assert [detect_format(record) for record in RECORDS] == [
        "HumanEval",
        "HumanEval",
        "HumanEval",
        "MBPP",
        "MBPP (sanitized)",
        "MBPP",
    ]
    assert detect_format({"task_id": 1}) is None


@pytest.mark.parametrize("kind", ["list", "jsonl", "dataset"])
def test_every_source_gives_the_same_tasks(kind: str, tmp_path: Path) -> None:
    source: Any = {
        "list": RECORDS,
        "jsonl": _write_jsonl(tmp_path / "tasks.jsonl", RECORDS),
        "dataset": FakeDataset(RECORDS),
    }[kind]
    tasks = load_tasks(source)
    assert [task.task_id for task in tasks] == ["Toy/0", "Toy/1", "Toy/2", "901", "902", "903"]
    assert [task.entry_point for task in tasks] == [
        "running_max",
        "unscramble",
        "triple",
        "count_vowels",
        "hypotenuse",
        "shared",
    ]
    assert [task.source for task in tasks] == ["humaneval"] * 3 + ["mbpp", "mbpp-sanitized", "mbpp"]
    assert [len(task.tests) for task in tasks] == [4, 2, 1, 4, 2, 2]
    assert tasks == load_tasks(str(_write_jsonl(tmp_path / "again.jsonl", RECORDS)))


def test_humaneval_check_is_split_into_one_test_per_assert_statement() -> None:
    task = load_tasks([HUMANEVAL])[0]
    assert task.tests == (
        "assert candidate([]) == []",
        "assert candidate([1, 3, 2]) == [1, 3, 3]",
        "assert candidate(data) == [5, 5, 7]",
        "for n in range(1, 4):\n    assert candidate(list(range(n))) == list(range(n))",
    )
    setup = [step.code for step in task.steps if not step.counted]
    assert setup == ['assert True, "always true: not a test"', "data = [5, 1, 7]"]
    assert "from typing import List" in task.test_setup and "METADATA" in task.test_setup
    assert "def check" not in task.test_setup  # its statements are the steps


def test_humaneval_parameter_names_and_check_calls_are_handled() -> None:
    task = load_tasks([HUMANEVAL_HELPER])[0]
    assert task.steps[0].code == "f = candidate" and not task.steps[0].counted
    assert "check(unscramble)" not in task.test_setup  # the harness calls the tests itself
    assert "def scramble" in task.test_setup  # the prompt's helper, for the tests


def test_unsplittable_check_is_one_test() -> None:
    task = load_tasks([HUMANEVAL_UNSPLIT])[0]
    assert task.tests == ("check(candidate)",)
    assert "def check(candidate)" in task.test_setup


def test_mbpp_tasks_show_the_first_test_and_name_the_function() -> None:
    full, sanitized = load_tasks([MBPP_FULL, MBPP_SANITIZED])
    assert full.description.startswith("Write a function to count the vowels")
    assert "`count_vowels`" in full.description and "assert count_vowels('hello') == 2" in full.description
    assert full.tests[-1] == "assert count_vowels('rhythm') == 0"  # challenge tests count too
    assert "\r" not in (full.canonical_solution or "")
    assert sanitized.test_setup == "import math" and sanitized.prompt_code == ""


@pytest.mark.parametrize("index", range(len(RECORDS)))
def test_reference_solutions_pass_and_wrong_ones_fail_in_the_env(index: int, make_env: Any) -> None:
    env = make_env(records=RECORDS)
    task = env.tasks[index]
    env.reset(options={"task_id": task.task_id})
    _, reward, terminated, _, info = env.step(fenced(task.canonical_solution))
    assert (info["outcome"], reward, terminated) == ("passed", 1.0, True), info["results"]
    env.reset(options={"task_id": task.task_id})
    _, reward, _, _, info = env.step(fenced(f"def {task.entry_point}(*args):\n    return 0\n"))
    assert info["outcome"] == "failed" and reward < 1.0


def test_a_full_function_reply_to_a_prompt_with_helpers_gets_them_from_the_task(make_env: Any) -> None:
    env = make_env(records=[HUMANEVAL_HELPER])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(fenced("def unscramble(text):\n    return text[-1:] + text[:-1]\n"))
    assert info["outcome"] == "passed" and reward == 1.0


def test_humaneval_split_gives_partial_credit(make_env: Any) -> None:
    env = make_env(records=[HUMANEVAL])
    env.reset(seed=0)
    # Right except on the empty list: 3 of 4 tests.
    _, reward, _, _, info = env.step(
        fenced(
            "def running_max(values):\n    return [max(values[: i + 1]) for i in range(len(values))] or None\n"
        )
    )
    assert (info["passed"], info["total"], reward) == (3, 4, 0.75)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        (
            [{"task_id": "a", "prompt": "x"}],
            r"record 0 is in no known format; closest is MBPP \(sanitized\), which lacks test_list",
        ),
        ([HUMANEVAL, {"task_id": "b", "entry_point": "f"}], r"record 1 .*lacks prompt, test"),
        (["not a dict"], "record 0: expected a mapping"),
        (
            [{**HUMANEVAL, "test": "def check(candidate):\n    assert candidate(("}],
            "record 0: the test does not compile",
        ),
        (
            [{**HUMANEVAL, "test": "assert running_max([]) == []"}],
            "record 0: the test must define one function check",
        ),
        (
            [{**HUMANEVAL, "test": 'def check(candidate):\n    candidate([1])\n    assert True, "x"\n'}],
            r"record 0: check\(candidate\) has no assert \(other than an always-true one\) and no raise",
        ),
        ([{**HUMANEVAL, "entry_point": "not a name"}], "not a Python name"),
        ([{**HUMANEVAL, "prompt": 42}], "field 'prompt' must be a non-empty string"),
        (
            [{**MBPP_FULL, "test_list": "assert count_vowels('a') == 1"}],
            "field 'test_list' must be a list of strings",
        ),
        ([{**MBPP_FULL, "test_list": []}], "test_list is empty"),
        ([{**MBPP_FULL, "test_list": ["assert count_vowels('a' == 1"]}], "a test does not compile"),
        ([{**MBPP_FULL, "code": None, "test_list": ["assert len('ab') == 2"]}], "cannot tell which function"),
        ([MBPP_FULL, MBPP_FULL], "records 0 and 1 share the task_id '901'"),
        ([], "no task records"),
        ({"train": [MBPP_FULL], "test": [MBPP_FULL]}, "pick a split, one of 'train', 'test'"),
        (42, "expected a JSONL path"),
    ],
)
def test_bad_records_are_refused_clearly(records: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_tasks(records)


def test_bad_jsonl_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(MBPP_FULL) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.jsonl:2: not valid JSON"):
        load_tasks(path)


def test_an_explicit_entry_point_overrides_detection() -> None:
    record = {**MBPP_BUILTIN_FIRST, "entry_point": "shared"}
    assert load_tasks([record])[0].entry_point == "shared"
