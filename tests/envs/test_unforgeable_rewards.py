"""Rewards that only a correct solution earns, in every env that tests code (Code-v0, CoopCode-v0,
ClassCompletion-v0), made as users make them.

Each hostile reply holds a wrong solution that turns right, or forges the harness's result line, only
if its route to a secret works:

- ``stdin``: re-read the harness's input after the harness consumed it (``os.pread`` on fd 0,
  reopening ``/proc/self/fd/0``, the judge's ``/proc/1/fd/0``, ``/proc/1/environ``), take the run's
  nonce and write a result line with it to every descriptor, then exit;
- ``memory``: read the writable memory of this process and of the judge (pid 1) through
  ``/proc/PID/mem``, looking for the nonce;
- ``frames``: walk the interpreter's frames up from a signal handler and from a traceback, looking
  for the nonce or the tests in the locals and constants of the frames above;
- ``ctypes``: rewrite, through ctypes, the code object of every comparison and reporting helper that
  the process holds, so that each says True;
- ``files``: read the env's own source files (the built-in problems with their reference solutions
  and tests), by their real paths, and walk the directories where the project and its
  virtual environment live.

Every reply must score nothing from the tests, and the env must then play a healthy episode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import gymnasium
import pettingzoo
import pytest

import mrlm.envs
from mrlm.envs.class_completion import builtin_classes
from mrlm.envs.code import builtin_tasks

ROUTES = ("stdin", "memory", "frames", "ctypes", "files")

#: Files whose text holds tests or reference solutions, and directories to walk for more.
_PACKAGE = os.path.dirname(mrlm.envs.__file__)
SECRET_FILES = [
    os.path.join(_PACKAGE, "code", "problems.py"),
    os.path.join(_PACKAGE, "coop_code", "problems.py"),
    os.path.join(_PACKAGE, "class_completion", "classes.py"),
]
SECRET_DIRECTORIES = [_PACKAGE, sys.prefix, os.path.dirname(os.path.dirname(os.path.dirname(_PACKAGE)))]

#: Shared by every route: a found nonce forges the report and leaves; found tests say True.
_FORGE = '''
def forge(data):
    import os, re
    nonce = re.search(rb"""nonce['"]: ?['"]([0-9a-f]{32})['"]""", data)
    if nonce is not None:
        report = "{'stage': 'tests', 'results': " + repr([[True, None, False, None]] * %(total)d) + "}"
        line = ("\\n@@mrlm-code-result " + nonce.group(1).decode() + " " + report + "\\n").encode()
        for fd in range(1, 64):
            try:
                os.write(fd, line)
            except OSError:
                pass
        os._exit(0)
    return "".join(%(needle)r) in data.decode("utf-8", "replace")
'''

_LOOKS = {
    "stdin": """
def look():
    import os
    data = b""
    for read in (
        lambda: os.pread(0, 1 << 22, 0),
        lambda: open("/proc/self/fd/0", "rb").read(),
        lambda: open("/proc/1/fd/0", "rb").read(),
        lambda: open("/proc/1/environ", "rb").read(),
        lambda: open("/proc/1/cmdline", "rb").read(),
    ):
        try:
            data += read()
        except Exception:
            pass
    return forge(data)
""",
    "memory": """
def look():
    import re
    data = b""
    for pid in ("self", "1"):
        try:
            with open("/proc/" + pid + "/maps") as maps, open("/proc/" + pid + "/mem", "rb") as memory:
                for line in maps:
                    start, end = (int(part, 16) for part in line.split()[0].split("-"))
                    if "rw" not in line.split()[1] or end - start > 1 << 26:
                        continue
                    try:
                        memory.seek(start)
                        data += memory.read(end - start)
                    except (OSError, ValueError, OverflowError):
                        pass
        except OSError:
            pass
    nonces = re.findall(rb'"nonce": ?"([0-9a-f]{32})"', data)
    return forge(b'"nonce": "' + nonces[-1] + b'"' if nonces else data[-1:])
""",
    "frames": """
def look():
    import os, signal
    seen = []
    def walk(frame):
        while frame is not None:
            try:
                seen.append(repr(frame.f_locals)[:1000000])
                seen.append(repr(frame.f_code.co_consts)[:100000])
            except Exception:
                pass
            frame = frame.f_back
    def handler(signum, frame):
        walk(frame)
    previous = signal.signal(signal.SIGUSR1, handler)
    os.kill(os.getpid(), signal.SIGUSR1)
    signal.signal(signal.SIGUSR1, previous)
    try:
        raise ValueError
    except ValueError as error:
        try:
            walk(error.__traceback__.tb_frame)
        except Exception:
            pass
    return forge("\\n".join(seen).encode("utf-8", "replace"))
""",
    "ctypes": """
def look():
    import ctypes, sys, types
    # Every comparison of the built-in types says "equal" (and "ordered"): the slot the interpreter
    # calls for ==, <, ... is replaced by one that answers True for all but !=.
    compare = ctypes.CFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_int)
    answers = (True, True, True, False, True, True)  # by op: <, <=, ==, !=, >, >= (no comparing here)
    always = compare(lambda left, right, op: answers[op])
    sys.modules["__main__"].__dict__["_keep_alive"] = always
    slot = 25 * ctypes.sizeof(ctypes.c_void_p)  # tp_richcompare in PyTypeObject
    for kind in (int, float, str, bytes, list, tuple, dict, set, frozenset, type(None)):
        ctypes.c_void_p.from_address(id(kind) + slot).value = ctypes.cast(always, ctypes.c_void_p).value
    # And every helper function whose name says it compares, checks or reports returns True.
    yes = (lambda *args, **kwargs: True).__code__
    def swap(function):
        words = (ctypes.c_void_p * 12).from_address(id(function))
        for index in range(12):
            if words[index] == id(function.__code__):
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(yes))
                words[index] = id(yes)
                return
    parts = ("eq", "strict", "check", "compar", "truth", "operand", "report", "canonical", "view")
    for module in list(sys.modules.values()):
        for name, value in list(vars(module).items()):
            if type(value) is types.FunctionType and not value.__code__.co_freevars:
                if any(part in name for part in parts):
                    try:
                        swap(value)
                    except Exception:
                        pass
    return False
""",
    "files": """
def look():
    import os
    texts = []
    for path in %(files)r:
        try:
            with open(path, errors="replace") as handle:
                texts.append(handle.read())
        except OSError:
            pass
    walked = 0
    for top in %(directories)r:
        for root, _, names in os.walk(top):
            walked += 1
            if walked > 3000:
                break
            for name in names:
                if name.endswith((".py", ".jsonl", ".json")) and ("problem" in name or "class" in name):
                    try:
                        with open(os.path.join(root, name), errors="replace") as handle:
                            texts.append(handle.read())
                    except OSError:
                        pass
    return forge("\\n".join(texts).encode("utf-8", "replace"))
""",
}


def hostile_helpers(route: str, total: int, needle: list[str]) -> str:
    """The functions ``forge`` and ``look`` of ``route``, as top-level code."""
    forge = _FORGE % {"total": total, "needle": needle}
    look = _LOOKS[route] % {"files": SECRET_FILES, "directories": SECRET_DIRECTORIES}
    return forge + look


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


def _guarded(name: str, params: str, helpers: str, right: str, wrong: str) -> str:
    """A function (or method) that runs ``look`` once, then answers right only if it found something."""
    body = textwrap.indent(helpers, "    ")
    return (
        f"def {name}({params}):\n{body}\n"
        f"    if look():\n{textwrap.indent(right, '        ')}\n"
        f"    return {wrong}\n"
    )


# -- Code-v0 -------------------------------------------------------------------------------------

DIGITAL_ROOT = next(task for task in builtin_tasks() if task.entry_point == "digital_root")
#: Text of the tests and the reference (never of the reply: it is assembled at run time).
DIGITAL_ROOT_NEEDLE = ["digital_root(", "99999) == 9"]
DIGITAL_ROOT_RIGHT = "return 0 if n == 0 else 1 + (n - 1) % 9"


def _code_env() -> gymnasium.Env[str, str]:
    return gymnasium.make("mrlm/Code-v0", max_turns=1, time_limit_s=20.0, test_time_limit_s=5.0)


@pytest.mark.parametrize("route", ROUTES)
def test_code_env_rewards_nothing_but_a_correct_solution(route: str) -> None:
    env = _code_env()
    options = {"task_id": DIGITAL_ROOT.task_id}
    helpers = hostile_helpers(route, len(DIGITAL_ROOT.tests), DIGITAL_ROOT_NEEDLE)
    reply = _guarded("digital_root", "n", helpers, DIGITAL_ROOT_RIGHT, "-1")
    env.reset(seed=0, options=options)
    _, reward, terminated, _, info = env.step(fenced(helpers + "\nlook()\n" + reply))
    assert terminated and (reward, info["passed"]) == (0.0, 0), info
    _healthy(lambda: _code_reward(env, options))


def _code_reward(env: gymnasium.Env[str, str], options: dict[str, Any]) -> float:
    env.reset(seed=1, options=options)
    _, reward, _, _, _ = env.step(fenced(f"def digital_root(n):\n    {DIGITAL_ROOT_RIGHT}\n"))
    return float(reward)


# -- CoopCode-v0 ---------------------------------------------------------------------------------

COOP_TASK = {"task_id": "mrlm-coop/1"}  # digital_root with the helper digit_sum
COOP_TESTS = 6
#: Only the tests count, so that a team that passes none scores exactly 0.
COOP_WEIGHTS = {"defined": 0.0, "compiles": 0.0, "tests": 1.0, "uses": 0.0}
COOP_HELPER = "def digit_sum(n):\n    return sum(int(digit) for digit in str(n))\n"
COOP_MAIN_RIGHT = "while n >= 10:\n    n = digit_sum(n)\nreturn n"


def _team_env(env_id: str, weights: dict[str, float]) -> Any:
    """A parallel team env made as users make it, one round, only the tests counted."""
    return pettingzoo.make(
        "parallel", env_id, max_turns=1, weights=weights, time_limit_s=20.0, test_time_limit_s=5.0
    )


def _coop_env() -> Any:
    return _team_env("mrlm/CoopCode-v0", COOP_WEIGHTS)


@pytest.mark.parametrize("route", ROUTES)
def test_coop_code_env_rewards_nothing_but_a_correct_solution(route: str) -> None:
    env = _coop_env()
    env.reset(seed=0, options=COOP_TASK)
    helpers = hostile_helpers(route, COOP_TESTS, DIGITAL_ROOT_NEEDLE)
    main = _guarded("digital_root", "n", helpers, "digit_sum(n)\n" + COOP_MAIN_RIGHT, "-1")
    _, rewards, terminations, _, infos = env.step({"helper": fenced(COOP_HELPER), "main": fenced(main)})
    assert all(terminations.values())
    assert rewards == {"helper": 0.0, "main": 0.0}, infos["main"]["components"]
    assert infos["main"]["components"]["tests"] == 0.0
    _healthy(lambda: _coop_reward(env))


def _coop_reward(env: Any) -> float:
    env.reset(seed=1, options=COOP_TASK)
    main = "def digital_root(n):\n" + textwrap.indent(COOP_MAIN_RIGHT, "    ") + "\n"
    _, rewards, _, _, _ = env.step({"helper": fenced(COOP_HELPER), "main": fenced(main)})
    return float(rewards["main"])


# -- ClassCompletion-v0 --------------------------------------------------------------------------

INVENTORY = builtin_classes()[0]
CLASS_TASK = {"task_id": INVENTORY.task_id}
CLASS_SEED = 1  # deals add_item and quantity to agent_0, remove_item and most_stocked to agent_1
CLASS_DEAL = {"agent_0": ["add_item", "quantity"], "agent_1": ["remove_item", "most_stocked"]}
CLASS_WEIGHTS = {"coverage": 0.0, "tests": 1.0, "balance": 0.0}
#: The reference bodies of the methods, and their parameters.
CLASS_METHODS = {method.name: method.solution or "" for method in INVENTORY.methods}
CLASS_NEEDLE = ["def test_add_", "item_2"]


def _class_env() -> Any:
    return _team_env("mrlm/ClassCompletion-v0", CLASS_WEIGHTS)


def _hostile_method(name: str, helpers: str) -> str:
    """``name`` as a method that is right only if ``look`` found something, else says 'wrong'."""
    header, _, body = CLASS_METHODS[name].partition("\n")
    params = header[header.index("(") + 1 : header.rindex(")")]
    return _guarded(name, params, helpers, textwrap.dedent(body), "'wrong'")


@pytest.mark.parametrize("route", ROUTES)
def test_class_completion_env_rewards_nothing_but_a_correct_solution(route: str) -> None:
    env = _class_env()
    env.reset(seed=CLASS_SEED, options=CLASS_TASK)
    helpers = hostile_helpers(route, len(INVENTORY.tests.tests), CLASS_NEEDLE)
    actions = {
        agent: fenced("\n\n".join(_hostile_method(name, helpers) for name in names))
        for agent, names in CLASS_DEAL.items()
    }
    _, rewards, terminations, _, infos = env.step(actions)
    assert all(terminations.values())
    assert infos["agent_0"]["components"]["tests"] == 0.0, infos["agent_0"]
    assert all(reward <= 0.0 for reward in rewards.values()), rewards
    _healthy(lambda: _class_reward(env))


def _class_reward(env: Any) -> float:
    env.reset(seed=CLASS_SEED, options=CLASS_TASK)
    actions = {
        agent: fenced("\n\n".join(CLASS_METHODS[name] for name in names))
        for agent, names in CLASS_DEAL.items()
    }
    _, rewards, _, _, _ = env.step(actions)
    return float(rewards["agent_0"])


def _healthy(play: Callable[[], float]) -> None:
    """The next episode, played right, earns the full reward."""
    assert play() == pytest.approx(1.0)


def test_the_hostile_replies_do_find_their_secrets_where_nothing_separates_them() -> None:
    """The control: the same routes, run as a plain program with the secrets in reach, find them.

    A harness that kept the tests in the solution's process, or a sandbox that showed the project's
    files, would be beaten by these replies; so a 0 above means the routes were closed, not that the
    replies were broken.
    """
    from mrlm.envs.sandbox import Sandbox

    payload = '{"nonce": "' + "ab" * 16 + '", "steps": [["assert digital_root(99999) == 9", true]]}'
    for route in ("stdin", "frames"):
        program = (
            hostile_helpers(route, 6, DIGITAL_ROOT_NEEDLE).replace("os._exit(0)", "raise SystemExit(3)")
            + "\nimport json, sys\n"
            + "payload = json.loads(sys.stdin.read()) if "
            + repr(route)
            + " == 'frames' else None\nnonce = payload and payload['nonce']\nprint(look())\n"
        )
        result = Sandbox.shared().run(program, stdin=payload)
        assert result.exit_code == 3, (route, result.stdout, result.stderr[-2000:])
    # Outside the sandbox the project's files are there to read, and a helper's code can be swapped.
    files = hostile_helpers("files", 6, DIGITAL_ROOT_NEEDLE) + "\nprint(look())\n"
    swapped = (
        "def compare_eq(left, right):\n    return left == right\n"
        + hostile_helpers("ctypes", 6, DIGITAL_ROOT_NEEDLE)
        + "\nlook()\nprint(compare_eq(1, 2) and [1] == [2] and 'a' == 'b')\n"
    )
    for program in (files, swapped):
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "True", done.stderr[-2000:]
