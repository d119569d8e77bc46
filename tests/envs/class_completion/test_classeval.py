"""ClassEval-format records: loading, the tests they give, and a full round on one.

The record is a small class written for these tests, in ClassEval's layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mrlm.envs.class_completion import load_class_tasks

SKELETON = '''import math


class Circle:
    """
    A circle of a given radius.
    """

    def __init__(self, radius):
        self.radius = radius

    def area(self):
        """
        :return: float, the area, rounded to 2 decimals
        >>> Circle(1).area()
        3.14
        """

    def scaled(self, factor):
        """
        :return: Circle, a new circle whose radius is multiplied by factor
        """

    def fits_in(self, other):
        """
        :return: bool, True when this circle's area is at most the other's
        """
'''
SOLUTION = """import math


class Circle:
    def __init__(self, radius):
        self.radius = radius

    def area(self):
        return round(math.pi * self.radius ** 2, 2)

    def scaled(self, factor):
        return Circle(self.radius * factor)

    def fits_in(self, other):
        return self.area() <= other.area()
"""
TEST = """import unittest


class CircleTestArea(unittest.TestCase):
    def setUp(self):
        self.unit = Circle(1)

    def test_area_1(self):
        self.assertEqual(self.unit.area(), 3.14)

    def test_area_2(self):
        self.assertEqual(Circle(0).area(), 0)


class CircleTestScaled(unittest.TestCase):
    def test_scaled(self):
        bigger = Circle(2).scaled(3)
        self.assertEqual(bigger.radius, 6)
        self.assertIsInstance(bigger, Circle)


class CircleTestFitsIn(unittest.TestCase):
    def test_fits_in(self):
        self.assertTrue(Circle(1).fits_in(Circle(2)))
        self.assertFalse(Circle(3).fits_in(Circle(2)))


class CircleTest(unittest.TestCase):
    def test_circle(self):
        self.assertEqual(Circle(1).scaled(2).area(), round(math.pi * 4, 2))


class UnusedHelper:
    pass
"""
RECORD: dict[str, Any] = {
    "task_id": "ClassEval_mini_0",
    "skeleton": SKELETON,
    "test": TEST,
    "solution_code": SOLUTION,
    "import_statement": ["import math"],
    "class_description": '    """\n    A circle of a given radius.\n    """\n',
    "methods_info": [
        {
            "method_name": name,
            "method_description": "",
            "test_class": test_class,
            "test_code": "",
            "solution_code": "",
            "dependencies": {
                "Standalone": not dependencies,
                "lib_dependencies": ["math"] if name == "area" else [],
                "field_dependencies": ["self.radius"],
                "method_dependencies": dependencies,
            },
        }
        for name, test_class, dependencies in [
            ("area", "CircleTestArea", []),
            ("scaled", "CircleTestScaled", []),
            ("fits_in", "CircleTestFitsIn", ["area"]),
        ]
    ],
    "class_name": "Circle",
    "test_classes": ["CircleTestArea", "CircleTestScaled", "CircleTestFitsIn", "CircleTest"],
    "class_constructor": "class Circle: \n    def __init__(self, radius):\n        self.radius = radius\n\n",
    "fields": ["self.radius"],
}


def test_a_classeval_record_becomes_a_task() -> None:
    (task,) = load_class_tasks([RECORD])
    assert (task.task_id, task.class_name, task.source) == ("ClassEval_mini_0", "Circle", "classeval")
    assert task.description == "A circle of a given radius."
    assert task.method_names == ("area", "scaled", "fits_in")
    assert task.methods[2].depends_on == ("area",)
    assert task.methods[0].stub.startswith('def area(self):\n    """\n    :return: float')
    assert task.methods[1].solution == "def scaled(self, factor):\n    return Circle(self.radius * factor)"
    assert task.tests.tests == (
        "CircleTestArea('test_area_1').debug()",
        "CircleTestArea('test_area_2').debug()",
        "CircleTestScaled('test_scaled').debug()",
        "CircleTestFitsIn('test_fits_in').debug()",
        "CircleTest('test_circle').debug()",
    )
    assert (
        task.test_sources[0]
        == "# CircleTestArea\ndef test_area_1(self):\n    self.assertEqual(self.unit.area(), 3.14)"
    )
    assert task.tests.test_setup.startswith("import math\nimport unittest\n")


@pytest.mark.parametrize("layout", ["jsonl", "json list"])
def test_a_classeval_record_loads_from_a_file_and_runs(make_env: Any, tmp_path: Path, layout: str) -> None:
    path = tmp_path / "classes.json"
    text = json.dumps(RECORD) + "\n" if layout == "jsonl" else json.dumps([RECORD], indent=2)
    path.write_text(text, encoding="utf-8")
    env = make_env(records=str(path), assignment="agents")
    observations, infos = env.reset(seed=0)
    assert infos["agent_0"]["methods"] == ["area", "scaled", "fits_in"]
    assert "class Circle:" in observations["agent_1"]["text"]
    (task,) = env.game.tasks
    solution = {method.name: method.solution for method in task.methods}
    split = {
        "agent_0": f"```python\n{solution['area']}\n```",
        "agent_1": f"```python\nimport math\n\n{solution['scaled']}\n\n{solution['fits_in']}\n```",
    }
    _, rewards, terminations, _, infos = env.step(split)
    assert infos["agent_0"]["results"] == [{"passed": True, "error": None, "timed_out": False}] * 5
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0} and terminations["agent_0"] is True
    assert infos["agent_0"]["program"].startswith("import math\n\nimport math\n\n\nclass Circle:")


def test_a_failing_unittest_reports_its_message(make_env: Any) -> None:
    env = make_env(records=[RECORD], assignment="agents")
    env.reset(seed=0)
    wrong = "def area(self):\n    return 3\n\ndef scaled(self, factor):\n    return self\n"
    _, _, _, _, infos = env.step({"agent_0": wrong, "agent_1": ""})
    results = infos["agent_0"]["results"]
    assert results[0] == {"passed": False, "error": "AssertionError: 3 != 3.14", "timed_out": False}
    assert results[2]["error"] == "AssertionError: 2 != 6"
    assert results[3]["error"] == "AssertionError: None is not true"  # fits_in is still a stub


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"skeleton": None}, "lacks skeleton"),
        ({"class_name": "Square"}, "defines no class 'Square'"),
        ({"methods_info": [{"method_name": "volume"}]}, r"methods \['volume'\] have no stub"),
        ({"test_classes": ["Nope"]}, r"test_classes \['Nope'\] are not defined"),
        ({"test": "import unittest\n", "test_classes": None}, "no unittest test method"),
        ({"import_statement": "import math"}, "import_statement must be a list"),
    ],
)
def test_bad_records_are_refused_with_a_reason(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_class_tasks([{**RECORD, **change}])
