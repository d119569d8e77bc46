"""Building the team's program from replies: extraction, body completion, ownership, line attribution."""

from __future__ import annotations

from mrlm.envs.coop_code import Part, assemble, contribute

HELPER = Part("h", stub='def h(x: int) -> int:\n    """Double x."""\n')
MAIN = Part("f", stub="def f(x: int) -> int:\n", uses=("h",))


def test_a_fenced_definition_is_taken_as_it_is() -> None:
    reply = "Sure.\n```python\nimport math\n\ndef h(x):\n    return 2 * x\n```\nDone."
    contribution = contribute("helper", HELPER, reply, ["f"])
    assert contribution.code == "import math\n\ndef h(x):\n    return 2 * x\n"
    assert (contribution.parses, contribution.defined, contribution.dropped) == (True, True, ())


def test_a_body_completes_the_stub_and_reasoning_is_skipped() -> None:
    contribution = contribute("helper", HELPER, "<think>def h(x): pass</think>\nreturn 2 * x", ["f"])
    assert contribution.code == 'def h(x: int) -> int:\n    """Double x."""\n    return 2 * x\n'
    assert contribution.defined is True


def test_code_defining_another_function_is_kept_but_does_not_define_the_part() -> None:
    contribution = contribute("helper", HELPER, "```python\ndef double(x):\n    return 2 * x\n```", ["f"])
    assert contribution.code.startswith("def double") and contribution.defined is False


def test_every_binding_of_a_teammate_name_is_dropped_with_its_statement() -> None:
    reply = (
        "```python\nimport os\n\n@decorate\ndef h(x):\n    return 0\n\nh = lambda x: 0\n\n"
        "try:\n    from helpers import h\nexcept ImportError:\n    pass\n\n"
        "def f(x):\n    return h(x) + 1\n```"
    )
    contribution = contribute("main", MAIN, reply, ["h"])
    kept = [line for line in contribution.code.split("\n") if line.strip()]
    assert kept == ["import os", "def f(x):", "    return h(x) + 1"]
    assert contribution.dropped == ("h",) and contribution.defined is True


def test_a_global_declaration_drops_even_the_agents_own_function() -> None:
    reply = "def f(x):\n    global h\n    h = abs\n    return h(x)\n"
    contribution = contribute("main", MAIN, reply, ["h"])
    assert contribution.dropped == ("h",) and contribution.defined is False


def test_empty_and_broken_replies() -> None:
    empty = contribute("helper", HELPER, "", ["f"])
    assert (empty.code, empty.parses, empty.defined) == ("", False, False)
    only_prose = contribute("helper", HELPER, "I cannot help with that.", ["f"])
    assert (only_prose.parses, only_prose.defined) == (False, False)
    broken = contribute("helper", HELPER, "```python\ndef h(x:\n```", ["f"])
    assert broken.code == "def h(x:\n" and broken.parses is False


def test_carriage_returns_do_not_shift_the_dropped_lines() -> None:
    reply = "def h(x):\r\n    return 0\r\n\r\ndef f(x):\r\n    return h(x) + 1\r\n"
    contribution = contribute("main", MAIN, reply, ["h"])
    assert contribution.code.strip() == "def f(x):\n    return h(x) + 1"


def test_the_program_lists_context_then_parts_and_knows_who_wrote_each_line() -> None:
    helper = contribute("helper", HELPER, "def h(x):\n    return 2 * x\n", ["f"])
    main = contribute("main", MAIN, "def f(x):\n    return h(x) + 1\n", ["h"])
    assembly = assemble("import math\n", [helper, main])
    assert assembly.source == (
        "import math\n\n"
        "# helper writes h\ndef h(x):\n    return 2 * x\n\n"
        "# main writes f\ndef f(x):\n    return h(x) + 1\n"
    )
    assert assembly.spans == (("helper", 4, 5), ("main", 8, 9))
    assert [assembly.author(line) for line in (1, 3, 4, 5, 7, 9, None)] == [
        None,
        None,
        "helper",
        "helper",
        None,
        "main",
        None,
    ]
    nobody = contribute("helper", HELPER, "", ["f"])
    assert assemble("", [nobody, main]).source == "# main writes f\ndef f(x):\n    return h(x) + 1\n"
