"""Replies that try to cheat: forged result lines, reading the tests, patching the harness or builtins,
returning objects that claim to equal anything.

Each cheating reply holds a wrong solution: it only scores if the cheat works. ``grade`` answers
"F" unless the cheat found something, and "F" is right for one test in five, so a failed cheat
scores exactly 0.2.
"""

from __future__ import annotations

from typing import Any

import pytest

from mrlm.envs.code import CodeTask, TestStep, builtin_tasks
from mrlm.envs.code._harness import RESULT_MARKER
from mrlm.envs.sandbox import Sandbox
from tests.envs.code.replies import fenced

GRADE = CodeTask(
    task_id="grade",
    entry_point="grade",
    description="",
    prompt_code='def grade(score: int) -> str:\n    """A for 90 and up, B for 80 and up, C for 70 and up, else F."""\n',
    test_setup="",
    steps=(
        TestStep("assert grade(95) == 'A'"),
        TestStep("assert grade(85) == 'B'"),
        TestStep("assert grade(90) == 'A'"),
        TestStep("assert grade(10) == 'F'"),
        TestStep("assert grade(75) == 'C'"),
    ),
)
FAKE_REPORT = "{'stage': 'tests', 'results': [[True, None, False, None]] * 5}"
FAKE_LINE = f"{RESULT_MARKER} 0123456789abcdef0123456789abcdef {FAKE_REPORT}"


def _score(make_env: Any, code: str) -> dict[str, Any]:
    env = make_env(records=[GRADE])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(fenced(code))
    info["reward"] = reward
    return info


def test_printing_a_fake_all_pass_summary_gains_nothing(make_env: Any) -> None:
    code = (
        f"import sys\nprint({FAKE_LINE!r})\nsys.stdout.flush()\n\n"
        f"def grade(score):\n    print({FAKE_LINE!r}, flush=True)\n    sys.__stdout__.write({FAKE_LINE!r})\n    return 'Z'\n"
    )
    info = _score(make_env, code)
    assert (info["outcome"], info["reward"], info["passed"]) == ("failed", 0.0, 0)


def test_writing_fake_summaries_to_every_descriptor_then_exiting_scores_zero(make_env: Any) -> None:
    code = (
        "import os\n"
        f"line = ('\\n' + {FAKE_LINE!r} + '\\n').encode()\n"
        "for fd in range(64):\n"
        "    try:\n"
        "        os.write(fd, line)\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
        "def grade(score):\n    return 'F'\n"
    )
    info = _score(make_env, code)
    # The writes reach only the solution's own pipe to the judge, which stops trusting it.
    assert (info["outcome"], info["reward"]) == ("error", 0.0)
    assert info["message"].startswith("SolutionGone: the solution process sent"), info["message"]


def test_a_forged_line_written_while_the_tests_run_voids_the_tests(make_env: Any) -> None:
    # The solution's process holds no descriptor of the report: the lines land on its own pipe to
    # the judge, which then ends that process, so even the right answers earn nothing.
    code = (
        "import os\n"
        "def grade(score):\n"
        f"    line = ('\\n' + {FAKE_LINE!r} + '\\n').encode()\n"
        "    for fd in range(3, 64):\n"
        "        try:\n"
        "            os.write(fd, line)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 'A' if score >= 90 else 'B' if score >= 80 else 'C' if score >= 70 else 'F'\n"
    )
    info = _score(make_env, code)
    assert (info["outcome"], info["reward"], info["passed"]) == ("failed", 0.0, 0), info["results"]


#: Ways a program might look for the tests; each returns some text, or raises when blocked.
_WALK = (
    "    out = []\n"
    "    while frame is not None:\n"
    "        out.append(repr(frame.f_code.co_consts))\n"
    "        try:\n"
    "            out.append(repr(frame.f_locals)[:100000])\n"
    "        except Exception:\n"
    "            pass\n"
    "        frame = frame.f_back\n"
    "    return ''.join(out)"
)
SEARCHES = {
    "stdin": "import sys\n    return sys.stdin.read()",
    "files": (
        "import os\n    found = []\n"
        "    for top in (os.getcwd(), '/tmp', os.path.expanduser('~')):\n"
        "        for root, _, names in os.walk(top):\n"
        "            for name in names:\n"
        "                try:\n"
        "                    with open(os.path.join(root, name), errors='replace') as handle:\n"
        "                        found.append(handle.read(1_000_000))\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return '\\n'.join(found)"
    ),
    "environment": "import os, sys\n    return repr(dict(os.environ)) + repr(sys.argv)",
    "caller frames": "import sys\n    frame = sys._getframe()\n" + _WALK,
    "inspect": "import inspect\n    return repr([(f.frame.f_locals, f.frame.f_code.co_consts) for f in inspect.stack()])",
    "traceback": (
        "try:\n        raise ValueError\n    except ValueError as error:\n"
        "        frame = error.__traceback__.tb_frame\n" + _WALK
    ),
    "generator": "def peek():\n        yield me.gi_frame.f_back\n    me = peek()\n    frame = next(me)\n"
    + _WALK,
    "gc": "import gc\n    return repr([o for o in gc.get_objects() if isinstance(o, (str, tuple))])",
    "gc referrers": "import gc\n    return repr(gc.get_referrers(grade))",
    "modules": (
        "import sys, types\n    out = []\n    for module in list(sys.modules.values()):\n"
        "        for value in list(vars(module).values()):\n"
        "            try:\n"
        "                out.append(repr(value)[:10000])\n"
        "            except Exception:\n"
        "                continue\n"
        "            code = getattr(value, '__code__', None)\n"
        "            if isinstance(code, types.CodeType):\n"
        "                out.append(repr(code.co_consts))\n"
        "    return '\\n'.join(out)"
    ),
    "tracing": (
        "import sys\n    seen = []\n"
        "    sys.settrace(lambda frame, event, arg: seen.append(repr(frame.f_back.f_code.co_consts)))\n"
        "    return repr(seen)"
    ),
    "ctypes": "import ctypes\n    return repr(ctypes.string_at(id(grade), 4096))",
}


def _cheat(search: str) -> str:
    """A wrong ``grade`` that answers right only if ``search`` finds the tests."""
    return (
        f"def look():\n    {SEARCHES[search]}\n\n"
        "def grade(score):\n"
        "    try:\n"
        "        found = look()\n"
        "    except Exception:\n"
        "        found = ''\n"
        # The needles are built at run time, so that the reply's own constants do not contain them:
        # the test's text, or the constants of its compiled code.
        "    needles = [''.join(['grade(', '9', '5', ')']), ''.join(['9', '5, ', chr(39), 'A', chr(39)])]\n"
        "    if any(needle in found for needle in needles):\n"
        "        return 'A' if score >= 90 else 'B' if score >= 80 else 'C' if score >= 70 else 'F'\n"
        "    return 'F'\n"
    )


@pytest.mark.parametrize("search", ["files", "caller frames", "inspect", "traceback", "generator", "gc"])
def test_the_searches_do_find_tests_that_a_naive_harness_leaves_around(search: str, sandbox: Sandbox) -> None:
    """The control: a harness that writes its tests to a file and runs them from its own frame."""
    tests = [step.code for step in GRADE.steps]
    naive = (
        f"{_cheat(search)}\n"
        f"TESTS = {tests!r}\n"
        "with open('naive_tests.py', 'w') as handle:\n"
        "    handle.write('\\n'.join(TESTS))\n"
        "for test in TESTS:\n"
        "    exec(test)\n"
        "print('all passed')\n"
    )
    result = sandbox.run(naive)
    assert result.ok and result.stdout == "all passed\n", result.stderr[-1000:]


@pytest.mark.parametrize("search", list(SEARCHES), ids=list(SEARCHES))
def test_looking_for_the_tests_finds_nothing_useful(make_env: Any, search: str) -> None:
    info = _score(make_env, _cheat(search))
    assert (info["outcome"], info["reward"]) == ("failed", 0.2), info["results"]


def test_patching_the_harness_and_builtins_changes_no_verdict(make_env: Any) -> None:
    code = (
        "import builtins, json, sys\n"
        "for module in list(sys.modules.values()):\n"
        "    for name in ('_text', '_describe', '_solution_line', '_syntax_report', 'StepTimeout', 'RESULT_MARKER'):\n"
        "        if hasattr(module, name):\n"
        "            try:\n"
        "                setattr(module, name, (lambda *args, **kwargs: None))\n"
        "            except Exception:\n"
        "                pass\n"
        "json.dumps = lambda *args, **kwargs: 'forged'\n"
        "builtins.isinstance = lambda *args: True\n"
        "builtins.repr = lambda value: 'forged'\n"
        "def grade(score):\n"
        "    builtins.AssertionError = None\n"
        "    builtins.str = lambda *args: None\n"
        "    return 'F'\n"
    )
    info = _score(make_env, code)
    assert (info["outcome"], info["reward"], info["passed"]) == ("failed", 0.2, 1)


def test_shadowing_builtins_that_the_tests_use_does_not_reach_the_tests(make_env: Any) -> None:
    task = CodeTask(
        "sort3",
        "sort3",
        "",
        'def sort3(values: list) -> list:\n    """Sorted copy."""\n',
        "",
        (TestStep("assert sorted(sort3([3, 1, 2])) == [1, 2, 3]"), TestStep("assert len(sort3([1])) == 1")),
    )
    env = make_env(records=[task])
    for cheat in (
        "def sorted(values):\n    return [1, 2, 3]\n\ndef len(values):\n    return 1\n\ndef sort3(values):\n    return []\n",
        "import builtins\n\ndef sort3(values):\n    builtins.sorted = lambda values: [1, 2, 3]\n    builtins.len = lambda values: 1\n    return []\n",
    ):
        env.reset(seed=0)
        _, reward, _, _, info = env.step(fenced(cheat))
        assert (info["outcome"], reward) == ("failed", 0.0), cheat


# A reply whose top level answers the judge's request to load it by itself, over the pipe the harness
# gave it, naming what it likes: here ``__builtins__``, a table whose abs, all, isinstance, sorted
# and __import__ are its own (the real ones it leaves cross back as handles to its own builtins).
_FORGED_LOAD = """
import sys, builtins as real
harness = sys.modules.get("mrlm.envs.code._harness") or sys.modules["__main__"]
overrides = {"abs": lambda *a: 0, "all": lambda *a: True, "isinstance": lambda *a: True,
             "sorted": lambda *a, **k: [1, 2, 3], "len": lambda *a: 1}
peer = harness._Peer(3, 4, harness._SOLUTION_OPERATIONS, harness._Borrowed, judge=False)
out = peer.out()
table = {name: overrides.get(name, getattr(real, name)) for name in dir(real)}
names = [["sort3", harness._encode(sort3, out)], ["__builtins__", harness._encode(table, out)]]
names += [["not a name", 1], ["__name__", "__main__"]]
harness._send(4, ["ok", names, []], out.attachments)
while True:  # then answers the tests' requests itself
    try:
        request, attachments = harness._receive(3)
    except BaseException:
        import os
        os._exit(0)
    peer.incoming = harness._In(peer._resolve, attachments, from_trusted=True)
    peer.serve(request)
"""


def test_a_load_answered_by_the_solution_itself_cannot_replace_the_tests_builtins(make_env: Any) -> None:
    task = CodeTask(
        "sort3",
        "sort3",
        "",
        'def sort3(values: list) -> list:\n    """Sorted copy."""\n',
        "import math\n",
        (
            TestStep("assert sorted(sort3([3, 1, 2])) == [1, 2, 3]"),
            TestStep("assert len(sort3([1])) == 1"),
            TestStep("assert abs(math.fsum(sort3([2.5])) - 2.5) < 1e-9"),
            TestStep("assert all([sort3([1]) == [1]]) and isinstance(sort3([1]), tuple)"),
            TestStep("assert __name__ == 'solution_tests'"),  # the tests' own module name, too
        ),
    )
    env = make_env(records=[task])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(fenced("def sort3(values):\n    return []\n" + _FORGED_LOAD))
    # Only the last test passes, as it does for the honest wrong reply.
    assert [result["passed"] for result in info["results"]] == [False, False, False, False, True], info
    assert (info["outcome"], reward) == ("failed", pytest.approx(0.2))


# Values that claim to be right: each reply below computes nothing and would pass some or all of the
# tests if the tests' comparisons, asserted values and arithmetic trusted the values' own methods.

_EQUAL = (
    "class Equal:\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    __hash__ = object.__hash__\n"
)
_ANYTHING = (
    "class Anything:\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    def __contains__(self, item):\n        return True\n"
    "    def __bool__(self):\n        return True\n"
    "    def __sub__(self, other):\n        return 0\n"
    "    __rsub__ = __sub__\n"
    "    def __lt__(self, other):\n        return False\n"
    "    __le__ = __gt__ = __ge__ = __lt__\n"
    "    __hash__ = object.__hash__\n"
)
_LYING = (
    "class Lying{base}({base}):\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    __hash__ = {base}.__hash__\n"
)
#: A task of numbers whose tests compare in every other way than ``==``.
SQUARE = CodeTask(
    task_id="square",
    entry_point="square",
    description="",
    prompt_code='def square(x: float) -> float:\n    """x times x."""\n',
    test_setup="",
    steps=(
        TestStep("assert square(2) == 4"),
        TestStep("assert not (square(3) != 9)"),
        TestStep("assert square(4) in [16, 16.0]"),
        TestStep("assert abs(square(1.5) - 2.25) < 1e-9"),
        TestStep("assert not abs(square(2.0) - 4.0) > 1e-9"),
        TestStep("assert not square(5) < 25 and not square(5) > 25"),
        # Through a conversion the judge's code makes: float(), math.fabs(), the parts of a complex.
        TestStep("assert not abs(float(square(2.0)) - 4.0) > 1e-9"),
        TestStep("import math\nassert not math.fabs(square(3) - 9) > 1e-9"),
        TestStep("assert not abs(complex(square(2)).real - 4) > 1e-9"),
    ),
)
#: A task of truths, asserted without comparison.
IS_EVEN = CodeTask(
    task_id="is_even",
    entry_point="is_even",
    description="",
    prompt_code='def is_even(n: int) -> bool:\n    """Whether n is even."""\n',
    test_setup="",
    steps=(
        TestStep("assert is_even(2)"),
        TestStep("assert is_even(10)"),
        TestStep("assert not is_even(3)"),
        TestStep("assert is_even(0) and not is_even(7)"),
    ),
)
#: Built-in problem (by entry point) -> (reply, tests it passes honestly).
CLAIMS = {
    "an always-equal object for a str": (
        "run_length_encode",
        _EQUAL + "def run_length_encode(text):\n    return Equal()\n",
        0,
    ),
    "a lying str subclass": (
        "caesar_shift",
        _LYING.format(base="str") + "def caesar_shift(text, shift):\n    return Lyingstr('?')\n",
        0,
    ),
    "a lying int subclass": (
        "digital_root",
        _LYING.format(base="int") + "def digital_root(n):\n    return Lyingint(-1)\n",
        0,
    ),
    "a lying list subclass": (
        "chunk",
        _LYING.format(base="list") + "def chunk(items, size):\n    return Lyinglist([None])\n",
        0,
    ),
    # Only ``len(pascal_row(30)) == 31`` passes: the list does have that length.
    "a list of always-equal objects": (
        "pascal_row",
        _EQUAL + "def pascal_row(n):\n    return [Equal()] * (n + 1)\n",
        1,
    ),
    # Honest: ``invert_mapping({}) == {}``, and the test that the input is left unchanged.
    "a dict of always-equal values": (
        "invert_mapping",
        _EQUAL + "def invert_mapping(m):\n    return {v: Equal() for v in m.values()}\n",
        2,
    ),
    "an always-equal object for a bool": (
        "balanced_brackets",
        _ANYTHING + "def balanced_brackets(text):\n    return Anything()\n",
        0,
    ),
}


def _run(make_env: Any, task: CodeTask, code: str) -> dict[str, Any]:
    env = make_env(records=[task])
    env.reset(seed=0)
    _, reward, _, _, info = env.step(fenced(code))
    info["reward"] = reward
    return info


def _builtin(entry_point: str) -> CodeTask:
    return next(task for task in builtin_tasks() if task.entry_point == entry_point)


@pytest.mark.parametrize(("entry_point", "code", "honest"), CLAIMS.values(), ids=CLAIMS.keys())
def test_values_that_claim_equality_gain_nothing(
    make_env: Any, entry_point: str, code: str, honest: int
) -> None:
    task = _builtin(entry_point)
    info = _run(make_env, task, code)
    assert (info["outcome"], info["passed"]) == ("failed", honest), info["results"]
    assert info["reward"] == pytest.approx(honest / len(task.tests))


@pytest.mark.parametrize(
    "value",
    [
        "Anything()",
        "Lyingfloat(0.0)",
        "float('nan')",
        # NaNs of other types: abs() of a complex with a NaN part, float() of a NaN Decimal would
        # be plain NaNs, which compare False and so pass ``not ... > tolerance``.
        "complex(float('nan'), 0.0)",
        "complex(4.0, float('nan'))",
        "__import__('decimal').Decimal('NaN')",
    ],
)
def test_numbers_that_claim_to_be_right_fail_every_kind_of_comparison(make_env: Any, value: str) -> None:
    code = _ANYTHING + _LYING.format(base="float") + f"def square(x):\n    return {value}\n"
    info = _run(make_env, SQUARE, code)
    assert (info["outcome"], info["passed"], info["reward"]) == ("failed", 0, 0.0), info["results"]


@pytest.mark.parametrize("method", ["__bool__", "__len__"])
def test_values_that_lie_about_their_truth_fail_asserts(make_env: Any, method: str) -> None:
    answer = "True" if method == "__bool__" else "1"
    code = f"class Liar:\n    def {method}(self):\n        return {answer}\n\ndef is_even(n):\n    return Liar()\n"
    info = _run(make_env, IS_EVEN, code)
    assert (info["outcome"], info["passed"], info["reward"]) == ("failed", 0, 0.0), info["results"]
    assert info["results"][0]["error"].startswith("TypeError: the asserted value is not of a built-in type")


def test_patching_the_checks_and_the_builtins_does_not_restore_the_claim(make_env: Any) -> None:
    code = (
        _EQUAL + "import builtins, sys, marshal, operator\n"
        "def grade(score):\n"
        "    for module in list(sys.modules.values()):\n"
        "        for name in list(vars(module)):\n"
        "            if name.startswith(('_strict', '_canonical', '_view', '_operands', '_ATOM', '_EXACT', '_LOADS')):\n"
        "                setattr(module, name, lambda *args, **kwargs: True)\n"
        "    for name in ('type', 'id', 'issubclass', 'isinstance', 'len', 'list', 'map', 'set', 'frozenset', 'bool'):\n"
        "        setattr(builtins, name, lambda *args, **kwargs: True)\n"
        "    marshal.dumps = marshal.loads = operator.sub = lambda *args: 0\n"
        "    return Equal()\n"
    )
    info = _score(make_env, code)
    assert (info["outcome"], info["reward"], info["passed"]) == ("failed", 0.0, 0), info["results"]


def test_a_thread_that_swaps_a_checked_value_gains_nothing(make_env: Any) -> None:
    # Between a check and its comparison the interpreter may switch threads; the checks compare
    # their own copies, so what the thread puts in the returned list afterwards is never seen.
    code = (
        _EQUAL + "import sys, threading\n"
        "sys.setswitchinterval(1e-6)\n"
        "def grade(score):\n"
        "    answer, running, equal = ['F'], threading.Event(), Equal()\n"
        "    def swap():\n"
        "        running.set()\n"
        "        while True:  # the thread is switched out between iterations: each value in turn\n"
        "            answer[0] = 'F' if answer[0] is equal else equal\n"
        "    threading.Thread(target=swap, daemon=True).start()\n"
        "    running.wait()\n"
        "    return answer\n"
    )
    tests = tuple(TestStep(f"assert grade({n}) == ['A']") for n in range(20))
    info = _run(make_env, CodeTask("grades", "grade", "", "", "", tests), code)
    assert (info["passed"], info["reward"]) == (0, 0.0), info["results"]


#: Right answers in other types than the tests' literals, which must still pass.
HONEST = {
    "floats for ints": ("digital_root", "def digital_root(n):\n    return float(n and 1 + (n - 1) % 9)\n"),
    "a defaultdict for a dict": (
        "invert_mapping",
        "from collections import defaultdict\n"
        "def invert_mapping(mapping):\n"
        "    out = defaultdict(list)\n"
        "    for key in sorted(mapping):\n"
        "        out[mapping[key]].append(key)\n"
        "    return out\n",
    ),
    "namedtuples for tuples": (
        "merge_intervals",
        "from collections import namedtuple\n"
        "Span = namedtuple('Span', 'start end')\n"
        "def merge_intervals(intervals):\n"
        "    merged = []\n"
        "    for start, end in sorted(intervals):\n"
        "        if merged and start <= merged[-1].end:\n"
        "            merged[-1] = Span(merged[-1].start, max(end, merged[-1].end))\n"
        "        else:\n"
        "            merged.append(Span(start, end))\n"
        "    return merged\n",
    ),
}


@pytest.mark.parametrize(("entry_point", "code"), HONEST.values(), ids=HONEST.keys())
def test_right_answers_of_other_built_in_types_still_pass(make_env: Any, entry_point: str, code: str) -> None:
    info = _run(make_env, _builtin(entry_point), code)
    assert (info["outcome"], info["reward"]) == ("passed", 1.0), info["results"]


def test_objects_of_the_solutions_own_class_are_compared_as_it_says(make_env: Any) -> None:
    task = CodeTask(
        "point",
        "Point",
        "",
        'class Point:\n    """A point of the plane that compares and adds by value."""\n',
        "",
        (
            TestStep("assert Point(1, 2) == Point(1, 2)"),
            TestStep("assert Point(1, 2) != Point(2, 1)"),
            TestStep("assert Point(1, 2) in [Point(0, 0), Point(1, 2)]"),
            TestStep("assert (Point(1, 2) + Point(3, 4)) == Point(4, 6)"),
            TestStep("assert (Point(1, 2).x, Point(1, 2).y) == (1, 2)"),
        ),
    )
    code = (
        "class Point:\n"
        "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
        "    def __eq__(self, other):\n        return (self.x, self.y) == (other.x, other.y)\n"
        "    def __add__(self, other):\n        return Point(self.x + other.x, self.y + other.y)\n"
    )
    info = _run(make_env, task, code)
    assert (info["outcome"], info["reward"]) == ("passed", 1.0), info["results"]


#: A task whose tests hand the solution a function of their own.
APPLY = CodeTask(
    "apply_all",
    "apply_all",
    "",
    'def apply_all(function, values: list) -> list:\n    """function(value) for each value."""\n',
    "EXPECTED = [2, 4, 6]\n",
    (
        TestStep("assert apply_all(lambda x: x * 2, [1, 2, 3]) == EXPECTED"),
        TestStep("assert apply_all(str, [1]) == ['1']"),
        TestStep("assert apply_all(getattr, []) == []"),
    ),
)


def test_functions_of_the_tests_can_be_called_by_the_solution_and_nothing_more(make_env: Any) -> None:
    honest = "def apply_all(function, values):\n    return [function(value) for value in values]\n"
    info = _run(make_env, APPLY, honest)
    # getattr is never handed to the solution: through it, the judge's globals would be in reach.
    assert (info["passed"], info["results"][2]["error"]) == (
        2,
        "TypeError: getattr cannot be passed to the solution",
    )
    snooping = (
        "def apply_all(function, values):\n"
        "    return function.__globals__['EXPECTED']\n"  # the tests' own namespace, if it were reachable
    )
    info = _run(make_env, APPLY, snooping)
    assert info["passed"] == 0, info["results"]
    assert "AttributeError" in info["results"][0]["error"]
