"""``Sandbox.run(..., until_output_closed=True)``: the result comes once the program has closed its
stdout and stderr (every process of it), without waiting for its exit; the worker ends what is left
of it before its next execution, and every limit still holds until then."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mrlm.envs.sandbox import Limits, Sandbox, Status
from tests.envs.sandbox.conftest import LIMITS, leftovers

#: Writes its result, closes its output, then goes on for ``{seconds}`` s before it exits.
LINGERS = (
    "import os, time\n"
    "os.write(1, b'result\\n')\n"
    "os.write(2, b'note\\n')\n"
    "os.close(1)\n"
    "os.close(2)\n"
    "time.sleep({seconds})\n"
)


@pytest.fixture
def one_worker() -> Iterator[Sandbox]:
    """One worker of its own, so each run meets what the previous one left."""
    with Sandbox(LIMITS, workers=1) as sandbox:
        yield sandbox


def test_the_result_comes_when_the_output_closes(one_worker: Sandbox) -> None:
    limits = Limits(wall_time_s=5.0, cpu_time_s=5.0)
    started = time.monotonic()
    result = one_worker.run(LINGERS.format(seconds=3), limits=limits, until_output_closed=True)
    elapsed = time.monotonic() - started
    assert (result.status, result.exit_code, result.signal) == (Status.OK, None, None), result
    assert (result.stdout, result.stderr) == ("result\n", "note\n")
    assert elapsed < 1.5, elapsed  # not the 3 s it goes on for
    # Without the option the same program is waited for, and its exit status reported.
    waited = one_worker.run(LINGERS.format(seconds=0.5), limits=limits)
    assert (waited.status, waited.exit_code, waited.stdout) == (Status.OK, 0, "result\n"), waited
    assert waited.duration_s >= 0.5


def test_what_is_left_of_the_program_is_ended_before_the_next_run(one_worker: Sandbox) -> None:
    spins = "import os\nprint('done', flush=True)\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n"
    long = Limits(wall_time_s=20.0, cpu_time_s=20.0)  # waited out, the spinner would hold the worker 20 s
    result = one_worker.run(spins, limits=long, until_output_closed=True)
    assert (result.status, result.stdout) == (Status.OK, "done\n"), result
    started = time.monotonic()
    after = one_worker.run("print('next')")
    assert (after.status, after.stdout) == (Status.OK, "next\n"), after
    assert time.monotonic() - started < 5.0  # the spinner was killed, not waited out
    assert leftovers(one_worker) == []


def test_every_process_holding_the_output_must_close_it(one_worker: Sandbox) -> None:
    # The first process closes its output at once; a child it forked still holds it and writes later.
    source = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    time.sleep(0.3)\n"
        "    os.write(1, b'late\\n')\n"
        "    os._exit(0)\n"
        "os.close(1)\n"
        "os.close(2)\n"
        "time.sleep(5)\n"
    )
    result = one_worker.run(source, limits=Limits(wall_time_s=5.0, cpu_time_s=5.0), until_output_closed=True)
    answered = time.monotonic()
    assert (result.status, result.stdout) == (Status.OK, "late\n"), result
    # The worker ends the rest (the first process, asleep for 5 s) just after it replies: on a busy
    # machine that may come a moment after the reply, but long before the 5 s are over.
    while leftovers(one_worker) and time.monotonic() - answered < 3.0:
        time.sleep(0.02)
    assert leftovers(one_worker) == []


def test_limits_hold_until_the_output_closes(one_worker: Sandbox) -> None:
    never_closes = one_worker.run("import time\ntime.sleep(10)\n", until_output_closed=True)
    assert never_closes.status is Status.TIMEOUT, never_closes
    floods = one_worker.run("while True:\n    print('x' * 1000)\n", until_output_closed=True)
    assert floods.status is Status.OUTPUT_LIMIT, floods
    assert leftovers(one_worker) == []
