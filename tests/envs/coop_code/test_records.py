"""HumanEval, CoopHumanEval and MBPP records become two-part tasks: ``aux`` and the entry point.

The records are small problems written for these tests, in each format's layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mrlm.envs.coop_code import load_coop_tasks
from tests.envs.coop_code.replies import fenced

HUMANEVAL: dict[str, Any] = {
    "task_id": "Mini/0",
    "prompt": (
        "from typing import List\n\n\ndef count_evens(values: List[int]) -> int:\n"
        '    """How many even numbers values holds.\n    >>> count_evens([1, 2, 4])\n    2\n    """\n'
    ),
    "canonical_solution": "    return sum(1 for value in values if value % 2 == 0)\n",
    "test": (
        "def check(candidate):\n    assert candidate([]) == 0\n    assert candidate([1, 2, 4]) == 2\n"
        "    assert candidate([3, 5]) == 0\n    assert candidate([-2, 0]) == 2\n"
    ),
    "entry_point": "count_evens",
}
#: CoopHumanEval: HumanEval's fields without a canonical solution; the prompt already has an ``aux``.
COOP_HUMANEVAL: dict[str, Any] = {
    "task_id": "CoopHumanEval/7",
    "prompt": (
        "def aux(text):\n    return text\n\n\n"
        'def shout(text: str) -> str:\n    """The text in capitals, followed by "!"."""\n'
    ),
    "test": "def check(candidate):\n    assert candidate('hi') == 'HI!'\n    assert candidate('') == '!'\n",
    "entry_point": "shout",
}
MBPP: dict[str, Any] = {
    "task_id": 901,
    "text": "Write a function to find the product of the digits of a positive number.",
    "code": "def digit_product(n):\n    result = 1\n    for d in str(n):\n        result *= int(d)\n    return result",
    "test_list": [
        "assert digit_product(123) == 6",
        "assert digit_product(5) == 5",
        "assert digit_product(40) == 0",
    ],
    "test_setup_code": "",
    "challenge_test_list": [],
}

AUX = "def aux(value):\n    return value % 2 == 0\n"
MAIN = "def count_evens(values):\n    return sum(1 for value in values if aux(value))\n"


def test_humaneval_record_splits_into_aux_and_the_entry_point() -> None:
    (task,) = load_coop_tasks([HUMANEVAL])
    helper, main = task.parts
    assert (helper.name, helper.stub, main.name, main.uses) == ("aux", "", "count_evens", ("aux",))
    assert main.stub.startswith("def count_evens(values: List[int]) -> int:")
    assert task.context.strip() == "from typing import List"
    assert task.source == "humaneval" and len(task.tests.tests) == 4


def test_a_humaneval_record_loads_and_runs(make_env: Any, tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(HUMANEVAL) + "\n", encoding="utf-8")
    env = make_env(records=str(path))
    observations, infos = env.reset(seed=0)
    assert (
        "`helper` writes `aux`" in observations["main"]["text"]
        or "named `aux`" in observations["helper"]["text"]
    )
    assert "def count_evens(values: List[int]) -> int:" in observations["helper"]["text"]
    assert infos["helper"]["function"] == "aux" and infos["main"]["function"] == "count_evens"
    _, rewards, terminations, _, info = env.step({"helper": fenced(AUX), "main": fenced(MAIN)})
    assert rewards["main"] == pytest.approx(1.0) and terminations["main"] is True
    assert info["main"]["program"].startswith("from typing import List\n\n# helper writes aux\n")


def test_a_main_that_only_forwards_to_aux_is_a_wrapper(make_env: Any) -> None:
    env = make_env(records=[HUMANEVAL])
    env.reset(seed=0)
    everything = "def aux(values):\n    return sum(1 for value in values if value % 2 == 0)\n"
    _, rewards, _, _, infos = env.step(
        {"helper": fenced(everything), "main": fenced("def count_evens(values):\n    return aux(values)\n")}
    )
    assert infos["main"]["usages"] == {"count_evens -> aux": "wrapper"}
    assert infos["main"]["components"]["tests"] == 1.0 and rewards["main"] == pytest.approx(0.7)


def test_coophumaneval_record_gets_a_free_helper_name(make_env: Any) -> None:
    (task,) = load_coop_tasks([COOP_HUMANEVAL])
    assert task.source == "coophumaneval"
    assert [part.name for part in task.parts] == ["aux_2", "shout"]
    env = make_env(records=[COOP_HUMANEVAL])
    env.reset(seed=0)
    helper = "def aux_2(text):\n    return text.upper()\n"
    main = "def shout(text):\n    return aux_2(text) + '!'\n"
    _, rewards, _, _, _ = env.step({"helper": fenced(helper), "main": fenced(main)})
    assert rewards["main"] == pytest.approx(1.0)


def test_mbpp_record_has_a_prose_main_part(make_env: Any) -> None:
    (task,) = load_coop_tasks([MBPP], helper_name="multiply_digits")
    assert [part.name for part in task.parts] == ["multiply_digits", "digit_product"]
    assert task.parts[1].stub == "" and "product of the digits" in task.description
    env = make_env(records=[MBPP], helper_name="multiply_digits")
    env.reset(seed=0)
    helper = "def multiply_digits(text):\n    result = 1\n    for d in text:\n        result *= int(d)\n    return result\n"
    main = "def digit_product(n):\n    return int(multiply_digits(str(n)))\n"
    _, rewards, _, _, _ = env.step({"helper": fenced(helper), "main": fenced(main)})
    assert rewards["main"] == pytest.approx(1.0)


def test_records_need_two_agents_and_a_known_format(make_env: Any) -> None:
    with pytest.raises(ValueError, match="num_agents=3, but tasks"):
        make_env(records=[HUMANEVAL], num_agents=3)
    with pytest.raises(ValueError, match="no known format"):
        make_env(records=[{"task_id": "x", "question": "?"}])
    with pytest.raises(ValueError, match="helper_name must be a Python name"):
        load_coop_tasks([HUMANEVAL], helper_name="not a name")
