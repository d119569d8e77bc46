"""Finding the code in a reply, and building the program that is tested from it (no execution)."""

from __future__ import annotations

import pytest

from mrlm.envs.code import CodeTask, TestStep, build_program, extract_code
from mrlm.envs.code.extract import defines, fenced_blocks

SOLUTION = "def add(a, b):\n    return a + b\n"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (f"```python\n{SOLUTION}```", SOLUTION),
        (f"Sure!\n```py\n{SOLUTION}```\nDone.", SOLUTION),
        (f"```\n{SOLUTION}```", SOLUTION),
        (f"```Python3\n{SOLUTION}```", SOLUTION),
        # Several blocks: the one defining the entry point wins over a later usage example.
        (f"```python\n{SOLUTION}```\nUsage:\n```python\nprint(add(1, 2))\n```", SOLUTION),
        # Several definitions: the last one (a fixed version) wins.
        (f"```python\ndef add(a, b):\n    return a - b\n```\nOops:\n```python\n{SOLUTION}```", SOLUTION),
        # No block defines it: the last block.
        ("```python\nx = 1\n```\n```python\ny = 2\n```", "y = 2\n"),
        # Non-Python labels are ignored while Python blocks exist.
        (f"```text\nnot code\n```\n```python\n{SOLUTION}```\n```output\n3\n```", SOLUTION),
        # ... and used when nothing else is there.
        ("```javascript\nlet x = 1;\n```", "let x = 1;\n"),
        # A block cut off at the end of the reply.
        (f"Here:\n```python\n{SOLUTION}", SOLUTION),
        # Indented blocks (inside a list item) are dedented.
        ("1. Code:\n   ```python\n   def add(a, b):\n       return a + b\n   ```", SOLUTION),
        # Raw text without fences is the code.
        (SOLUTION, SOLUTION),
        ("    return a + b\n", "return a + b\n"),
        # Reasoning before </think> is dropped, with its draft code.
        (f"<think>\n```python\ndef add(a, b):\n    pass\n```\n</think>\n```python\n{SOLUTION}```", SOLUTION),
        ("", None),
        ("   \n\t", None),
        ("```python\n```", None),
        ("```python\n\n\n```\nno code, sorry", None),
    ],
)
def test_extract_code(reply: str, expected: str | None) -> None:
    assert extract_code(reply, "add") == expected


def test_fenced_blocks_keep_labels_and_order() -> None:
    text = "a\n```python\n1\n```\nb\n````\n2\n````\n```sh\n3"
    assert fenced_blocks(text) == [("python", "1\n"), ("", "2\n"), ("sh", "3")]


def test_defines_finds_top_level_definitions_only() -> None:
    assert defines("def add(a):\n    pass", "add")
    assert defines("async def add(a):\n    pass", "add")
    assert defines("@cache\nclass add:\n    pass", "add")
    assert not defines("def adder(a):\n    pass", "add")
    assert not defines("class C:\n    def add(self):\n        pass", "add")
    assert not defines("# def add(a): in a comment, indented\n  def add(a): pass", "add")


PROMPT = 'import math\n\n\ndef helper(x):\n    return x\n\n\ndef area(r: float) -> float:\n    """Area of a circle."""\n'
TASK = CodeTask("t/0", "area", "", PROMPT, "", (TestStep("assert area(1) > 3"),))


def test_a_reply_defining_the_entry_point_follows_the_prompt_context() -> None:
    program = build_program(TASK, "def area(r):\n    return math.pi * helper(r) ** 2\n")
    assert program.mode == "definition"
    assert program.source.startswith("import math\n\n\ndef helper(x):")
    assert "Area of a circle" not in program.source
    assert program.line_offset == 7 and program.reply_line(8) == 1 and program.reply_line(3) is None


@pytest.mark.parametrize("body", ["return math.pi * r * r\n", "    return math.pi * r * r\n"])
def test_a_body_is_appended_to_the_prompt_with_the_body_indentation(body: str) -> None:
    program = build_program(TASK, body)
    assert program.mode == "completion"
    assert program.source == PROMPT + "    return math.pi * r * r\n"
    assert program.line_offset == PROMPT.count("\n")


def test_a_multi_line_body_keeps_its_own_structure() -> None:
    program = build_program(TASK, "if r < 0:\n    raise ValueError\nreturn r\n")
    assert program.source.endswith('"""\n    if r < 0:\n        raise ValueError\n    return r\n')


@pytest.mark.parametrize(
    ("code", "mode"),
    [
        ("import math\n\ndef circle_area(r):\n    return math.pi * r * r\n", "definition"),
        ("def other(r):\n    return r\n", "definition"),
        ("@staticmethod\ndef other(r):\n    return r\n", "definition"),
        ("import math\nreturn math.pi * r * r\n", "completion"),
        ("def helper(x):\n    return x * x\nreturn math.pi * helper(r)\n", "completion"),
        ("# a comment\nreturn r\n", "completion"),
    ],
)
def test_a_reply_that_reads_as_a_module_stands_alone(code: str, mode: str) -> None:
    assert build_program(TASK, code).mode == mode


def test_prose_tasks_take_the_code_alone() -> None:
    task = CodeTask("t/1", "area", "Compute an area.", "", "", (TestStep("assert area(1) > 3"),))
    program = build_program(task, "x = 1\n")
    assert (program.mode, program.source, program.line_offset) == ("code", "x = 1\n", 0)


def test_a_task_needs_a_counted_test_and_a_valid_entry_point() -> None:
    with pytest.raises(ValueError, match="no tests"):
        CodeTask("t/2", "f", "", "", "", (TestStep("x = 1", counted=False),))
    with pytest.raises(ValueError, match="not a Python name"):
        CodeTask("t/3", "not valid", "", "", "", (TestStep("pass"),))
