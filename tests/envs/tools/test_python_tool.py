"""The python tool keeps state across calls of one episode, in the sandbox, and reports failures."""

from __future__ import annotations

import os
import pickle

import pytest

from mrlm.envs.sandbox import Limits
from mrlm.envs.tools.python_session import PythonSession, python_tool
from mrlm.envs.tools.registry import ToolError, ToolRegistry
from mrlm.envs.tools.workspace import Workspace

FAST = Limits(wall_time_s=1.0, cpu_time_s=1.0)


def _error(session: PythonSession, code: str) -> str:
    with pytest.raises(ToolError) as caught:
        session.run(code)
    return str(caught.value)


def test_state_persists_across_calls_like_a_notebook() -> None:
    session = PythonSession(limits=FAST)
    assert session.run("x = 40\nimport math") == "(no output)"
    assert session.run("def f(n):\n    return n + x\nprint('defined')") == "defined"
    assert session.run("f(2)") == "42"
    assert session.run("math.factorial(5)\ny = None\ny") == "(no output)"  # None is not echoed
    assert session.run("print('a'); 'b'") == "a\n'b'"
    assert (
        session.run("import sys\nprint('warn', file=sys.stderr)\nf(0)") == "40\nwarn"
    )  # stdout, then stderr
    assert len(session.history) == 6


def test_errors_show_the_cell_traceback_and_are_not_kept() -> None:
    session = PythonSession(limits=FAST)
    session.run("y = 1")
    message = _error(session, "print('before')\n1 / y - 1 / 0")
    assert message.startswith('before\nTraceback (most recent call last):\n  File "<cell 2>", line 2')
    assert "1 / y - 1 / 0" in message and message.endswith("ZeroDivisionError: division by zero")
    assert "main.py" not in message and "/tmp" not in message  # no sandbox paths
    assert _error(session, "def broken(:\n    pass").endswith("SyntaxError: invalid syntax")
    assert _error(session, "raise SystemExit(0)").endswith("SystemExit: 0")
    assert session.history == ["y = 1"]
    assert session.run("y") == "1"


def test_a_fresh_session_per_episode() -> None:
    session = PythonSession(limits=FAST)
    session.run("secret = 7")
    session.reset()
    assert _error(session, "secret").endswith("NameError: name 'secret' is not defined")


def test_state_never_lives_in_this_process() -> None:
    session = PythonSession(limits=FAST)
    session.run("import os\nos.environ['MRLM_PY_TOOL_PROBE'] = '1'\nopen('probe.txt', 'w').write('x')")
    assert "MRLM_PY_TOOL_PROBE" not in os.environ and not os.path.exists("probe.txt")
    assert session.run("os.environ.get('MRLM_PY_TOOL_PROBE')") == "'1'"  # rebuilt by replay in the sandbox
    assert session.run(f"import os\nos.getpid() != {os.getpid()}") == "True"


def test_limits_become_readable_errors() -> None:
    session = PythonSession(limits=FAST, output_chars=100)
    session.run("n = 3")
    message = _error(session, "print('started', flush=True)\nwhile True:\n    pass")
    assert "time limit exceeded" in message and "replays the 1 earlier cells" in message
    long = session.run("print('x' * 1000)")
    assert long.startswith("x" * 100) and "900 more characters not shown" in long
    flood = _error(session, "while True:\n    print('y' * 10000)")
    assert "output limit exceeded" in flood
    assert session.history == ["n = 3", "print('x' * 1000)"]


def test_a_cell_that_fails_on_replay_resets_the_session() -> None:
    session = PythonSession(limits=FAST)
    session.history = ["z = 1", "import random\nassert random.random() < 0"]  # fails when replayed
    message = _error(session, "z")
    assert "could not be restored" in message and "AssertionError" in message and "2 earlier cells" in message
    assert session.history == []
    assert session.run("z = 5\nz") == "5"


def test_history_is_bounded() -> None:
    session = PythonSession(limits=FAST, max_cells=2)
    session.run("a = 1")
    session.run("b = 2")
    assert "will not persist" in session.run("c = 3")
    assert _error(session, "c").endswith("NameError: name 'c' is not defined")


def test_cells_read_the_workspace_files_but_cannot_change_them() -> None:
    workspace = Workspace()
    workspace.reset({"data/v.csv": "1\n2\n3\n"})
    session = PythonSession(limits=FAST, workspace=workspace)
    assert session.run("sum(int(line) for line in open('data/v.csv'))") == "6"
    session.run("open('data/v.csv', 'w').write('9\\n')")
    assert workspace.read("data/v.csv") == "1\n2\n3\n"
    workspace.close()


def test_the_python_tool_and_pickling() -> None:
    session = PythonSession(limits=FAST)
    registry = ToolRegistry([python_tool(session)])
    assert registry.call("python", {"code": "6 * 7"}).content == "42"
    failed = registry.call("python", {"code": "1/0"})
    assert (failed.ok, failed.malformed) == (False, False)
    assert registry.call("python", {"code": ""}).malformed
    assert registry.call("python", {"code": "x" * 8001}).malformed
    copy = pickle.loads(pickle.dumps(session))
    assert copy.history == session.history and copy.run("1 + 1") == "2"
